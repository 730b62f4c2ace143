"""`make demo`'s story (prosper demo): kill -9, inspect, resume, identical output, stack table."""
import json
import re

from conftest import prosper


def test_demo_tells_the_kill_and_resume_story():
    p = prosper("demo", "--json", "--seed", "7", "--generations", "120", timeout=600)
    out = p.stderr   # --json: the story on stderr, what it found as one JSON object on stdout
    assert p.returncode == 0, out[-3000:] + p.stdout[-2000:]
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
    found = json.loads(p.stdout)
    assert found["passed"] is True and found["process_identical"] is True and found["stack_table_ok"] is True
    assert found["life_finished"]["identical"] and found["life_finished"]["generation"] == 120
    assert found["crashtest"]["inconsistent"] == 0 and found["crashtest"]["mutants_caught"] == found["crashtest"]["mutants"]
