"""`make demo`'s story (prosper demo): kill -9, inspect, resume, identical output, stack table."""
import re

from conftest import prosper


def test_demo_tells_the_kill_and_resume_story():
    p = prosper("demo", "--seed", "7", "--generations", "120", timeout=600)
    out = p.stdout
    assert p.returncode == 0, out[-3000:] + p.stderr[-2000:]
    assert "prosper run: kill -9 after" in out and "prosper resume: ran to its end, exit code 0" in out
    assert "what the pool holds (prosper inspect)" in out and re.search(r"\| region \d+ \S+\s+stack\s+redo", out)
    assert "IDENTICAL to the native run" in out
    # the stack table: one measured row per program, page-level never below Prosper's 8 B diff,
    # the diff never below the exact minimum
    rows = re.findall(r"^\s+(bc \(pi, 1000 digits\)|quicksort|recursive-16)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    assert len(rows) == 3, out
    for name, ckpts, page, diff, exact in rows:
        assert int(ckpts) >= 1 and int(page) >= int(diff) >= int(exact), name
    assert "Demo passed" in out
