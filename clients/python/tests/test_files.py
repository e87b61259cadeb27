"""Files in and out, against the real stack: files given to a program are in its working
directory (read-only), files it leaves under out/ come back in `Result.files` with their digests,
the receipt proves them (an edited file fails), a session carries them from step to step, each
step in a fresh sandbox, and bad names or sizes are refused by the services."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from airlock_client import Client, RefusedError, ResultMismatchError, Session

SALES = "region,amount\nnorth,120\nsouth,80\nnorth,30\n"

SUMMARISE = """
import csv, json, os
rows = list(csv.DictReader(open("sales.csv")))
totals = {}
for row in rows:
    totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
with open("out/totals.json", "w") as out:
    json.dump(totals, out, sort_keys=True)
# A small picture, written by hand: an SVG bar per region.
bars = "".join(f'<rect x="{i * 30}" y="0" width="20" height="{v}"/>' for i, v in enumerate(totals.values()))
os.makedirs("out/charts", exist_ok=True)
open("out/charts/bars.svg", "w").write(f'<svg xmlns="http://www.w3.org/2000/svg">{bars}</svg>')
print("read-only:", not os.access("sales.csv", os.W_OK))
"""


def test_files_go_in_read_only_and_files_under_out_come_back_proven_by_the_receipt(
    client: Client, tmp_path: Path
) -> None:
    source = tmp_path / "sales.csv"
    source.write_text(SALES)
    result = client.run(SUMMARISE, files={"sales.csv": source}, label="summarise.py")
    assert result.ok, result.to_json()
    assert "read-only: True" in result.stdout
    assert [f.name for f in result.files] == ["totals.json", "charts/bars.svg"]
    totals = result.file("totals.json")
    assert json.loads(totals.content) == {"north": 150, "south": 80}
    assert totals.sha256 == "sha256:" + hashlib.sha256(totals.content).hexdigest()
    assert totals.media_type == "application/json" and totals.size == len(totals.content)
    assert [f.name for f in result.images] == ["charts/bars.svg"]
    assert result.files_unavailable is None
    # The receipt proves the files (and that the approved request had exactly these inputs).
    assert client.verify_receipt(result)
    edited = dataclasses.replace(totals, content=b'{"north": 1}')
    forged = dataclasses.replace(result, files=(edited, result.files[1]))
    with pytest.raises(ResultMismatchError, match="files"):
        client.verify_receipt(forged)
    # Saved and read back, the result still verifies, and a file saves under its name.
    again = type(result).from_json(json.loads(json.dumps(result.to_json())))
    assert client.verify_receipt(again)
    saved = result.file("charts/bars.svg").save(tmp_path / "out")
    assert saved == tmp_path / "out" / "charts" / "bars.svg" and saved.read_bytes().startswith(b"<svg")


def test_a_session_carries_each_steps_out_files_to_the_next_in_fresh_sandboxes(client: Client) -> None:
    session: Session = client.session(files={"sales.csv": SALES})
    first = session.run(SUMMARISE, label="step 1")
    assert first.ok, first.to_json()
    second = session.run(
        "import json, os\n"
        "totals = json.load(open('totals.json'))\n"
        "print('files here:', sorted(os.listdir('.')))\n"
        "open('out/report.md', 'w').write('# Sales\\n' + ''.join(f'- {k}: {v}\\n' for k, v in sorted(totals.items())))\n",
        label="step 2",
    )
    assert second.ok, second.to_json()
    # A step takes the options of `Client.run` (here: stages as they come, a bound on waiting).
    stages: list[str] = []
    third = session.run("print(open('report.md').read())", label="step 3", wait=300, on_status=lambda s: stages.append(s.stage))
    assert third.ok, third.to_json()
    assert stages[-1] == "ended" and "running" in stages, stages
    assert third.stdout == "# Sales\n- north: 150\n- south: 80\n\n"
    # Each step ran in its own sandbox: nothing of step 1 but its out/ files reached step 2.
    assert "files here: ['charts', 'out', 'sales.csv', 'totals.json']" in second.stdout
    assert set(session.files) == {"sales.csv", "totals.json", "charts/bars.svg", "report.md"}
    assert len({r.request_id for r in session.results}) == 3
    for result in session.results:
        assert client.verify_receipt(result)


def test_a_misspelt_field_is_named_with_the_ones_there_are(client: Client) -> None:
    with pytest.raises(TypeError, match=r"not a field of a Submission: pakages .*packages.*on_status go to run"):
        client.session().run("print(1)", pakages=["six"])  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "files, reason",
    [
        ({"../escape.txt": b"x"}, "not a relative path"),
        ({"/etc/cron.d/job": b"x"}, "not a relative path"),
        ({"out/planted.txt": b"x"}, "output directory"),
        ({"big.bin": b"x" * (1024 * 1024 + 1)}, "per file"),
    ],
)
def test_bad_file_names_and_sizes_are_refused_and_nothing_runs(
    client: Client, files: dict[str, bytes], reason: str
) -> None:
    with pytest.raises(RefusedError, match=reason) as refused:
        client.run("print('never')", files=files)
    assert refused.value.result.stdout == ""
