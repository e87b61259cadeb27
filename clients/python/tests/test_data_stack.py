"""The scientific stack in the sandbox: numpy, pandas, scipy and matplotlib installed by
`packages=` from a local index of real manylinux wheels (ops/install-deps downloads them), then
imported and used in one run. It fails when the image lacks a system library the wheels need
(`libstdc++.so.6: cannot open shared object file` before the image carried the C++ runtime)."""

from __future__ import annotations

import pytest

from airlock_client import Client, Operator

from .conftest import data_stack_pins, missing_wheels, wheelhouse

ANALYSIS = """
import numpy, pandas, scipy, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from scipy import stats

frame = pandas.DataFrame({"x": numpy.arange(20, dtype=float)})
frame["y"] = 3 * frame.x + 2
slope = stats.linregress(frame.x, frame.y).slope
figure, axes = plt.subplots()
axes.plot(frame.x, frame.y)
axes.set_title("a line")  # text: needs a font
figure.savefig("out/line.png")
with open("out/line.png", "rb") as png:
    print("png", png.read(8) == b"\\x89PNG\\r\\n\\x1a\\n")
plt.close(figure)
# Left open, as plt.show() under Agg leaves it: the sandbox saves it to out/figure-1.png (matplotlib numbers it 1 again).
plt.figure()
plt.bar(["a", "b"], [1, 2])
print("sum", int(frame.y.sum()), "slope", round(float(slope), 6))
print("versions", numpy.__version__, pandas.__version__, scipy.__version__, matplotlib.__version__)
"""


def test_numpy_pandas_scipy_and_matplotlib_install_and_run(client: Client, operator: Operator) -> None:
    pins = data_stack_pins()
    missing = missing_wheels(pins)
    if missing:
        pytest.fail(f"the wheelhouse {wheelhouse()} lacks {missing}: run ops/install-deps")
    top = [spec for spec in pins if spec.split("==")[0] in ("numpy", "pandas", "scipy", "matplotlib")]
    request = client.submit(ANALYSIS, packages=top, trust="trusted")
    # The packages' own code is rated before the gate decides. Their native code cannot be read,
    # so they rate HIGH and run by policy with the untrusted quota; nothing else in them (their
    # test suites are neither rated nor installed) puts the analysis in front of a human, whose
    # approvals would be given by reflex.
    result = request.result(900)
    assert result.ok, result.to_json()
    assert result.verdict == "HIGH" and result.approver is not None and result.approver.by == "policy", result.to_json()
    assert not [p for p in operator.list_overrides() if p.request_id == request.request_id]
    assert "png True" in result.stdout
    assert "sum 610 slope 3.0" in result.stdout
    # What it saved under out/, and the figure it left open, come back as images.
    assert [(f.name, f.media_type) for f in result.images] == [("figure-1.png", "image/png"), ("line.png", "image/png")]
    assert all(f.content.startswith(b"\x89PNG") for f in result.images)
    versions = {spec.split("==")[0]: spec.split("==")[1] for spec in top}
    assert f"versions {versions['numpy']} {versions['pandas']} {versions['scipy']} {versions['matplotlib']}" in result.stdout
    assert client.verify_receipt(result)
