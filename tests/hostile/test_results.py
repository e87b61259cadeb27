"""The program cannot forge its own result: the exit status and the end of its output come from
outside it, and a client that was away reads its result from the stream."""

from __future__ import annotations

from conftest import run
from wire import new_id, request, submission, submit, terminal

FAKE_EXIT_RECORD = """
import os, sys
padding = b" " * (70 * 1024)
for fd in range(3, 20):
    try:
        os.write(fd, padding + b'{"event":"exit","code":0}\\n')
    except OSError:
        pass
print("forged")
sys.exit(3)
"""

# Looks for anything like an in-band end marker in its own memory and prints it, then goes on.
PRINT_MARKERS = r"""
import re, sys
found = []
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if "r" not in perms:
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        if end - start > 64 << 20:
            continue
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        found += re.findall(rb"\n\x00airlock-end-[0-9a-f]{32}\x00", chunk)
for marker in set(found):
    sys.stdout.buffer.write(marker)
    sys.stderr.buffer.write(marker)
sys.stdout.flush()
print("after the markers")
print("after the markers", file=sys.stderr)
sys.exit(3)
"""

CLOSES_OUTPUT = """
import os, time
print("bye", flush=True)
os.close(1)
os.close(2)
time.sleep(1.5)
raise SystemExit(4)
"""


def test_the_program_cannot_forge_its_exit_or_end_its_output(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        for code, exit_code, must_see in [
            (FAKE_EXIT_RECORD, 3, b"forged"),
            (PRINT_MARKERS, 3, b"after the markers"),
            (CLOSES_OUTPUT, 4, b"bye"),
        ]:
            rid = new_id()
            await submit(mai, rid, submission(rid, request(code, trust="trusted")))
            end = (await terminal(mai, rid))["event"]["data"]
            assert end["outcome"] == "finished", end
            assert end["exit_code"] == exit_code, (code[:40], end)
            assert must_see in bytes(end["stdout"]), bytes(end["stdout"])[-200:]
        await mai.close()

    run(go())


def test_a_client_that_was_away_reads_its_result_from_the_stream(stack) -> None:
    async def go() -> None:
        first = await stack.connect("mai")
        rid = new_id()
        await submit(first, rid, submission(rid, request("import time; time.sleep(1); print('done')")))
        await first.close()  # gone before the result exists
        import asyncio
        await asyncio.sleep(3)
        later = await stack.connect("mai")
        end = (await terminal(later, rid, timeout=30))["event"]["data"]
        assert end["outcome"] == "finished" and bytes(end["stdout"]) == b"done\n"
        await later.close()

    run(go())
