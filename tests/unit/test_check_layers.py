#!/usr/bin/env python3
"""test_check_layers.py [SCRIPT] -- scripts/check_layers on the fixture directories of tests/unit/layers.

A cycle must fail (exit 1) and be named as a file chain; names that only look like calls (in
comments, strings, macros' names, members, declarations, a file's own static function) must not
make one; several directories are one graph; --order fails a call upwards in the listed order.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "scripts", "check_layers")
FIX = os.path.join(HERE, "layers")


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, cwd=FIX)
    return p.returncode, p.stdout, p.stderr


def case_cycle():
    rc, out, err = run("cycle")
    assert rc == 1, (rc, out, err)
    assert "cycle: low.c -[top_hook]-> top.c -[mid_step]-> mid.c -[low_work]-> low.c" in out, out
    last = out.strip().splitlines()[-1]
    assert last == "check_layers: cycle: 1 cycle(s) among 3 files, 3 edges", last


def case_no_cycle():
    rc, out, err = run("--edges", "nocycle")
    assert rc == 0, (rc, out, err)
    assert not any(line.startswith("cycle:") for line in out.splitlines()), out
    # the calls that are real are seen: the check is not passing for seeing nothing
    for edge in ("mid.c -> low.c: low_work", "top.c -> mid.c: mid_step", "top.c -> side.c: side_use"):
        assert edge in out, (edge, out)
    assert "low.c -> top.c" not in out and "side.c -> top.c" not in out, out
    last = out.strip().splitlines()[-1]
    assert last == "check_layers: nocycle: no cycle among 4 files, 3 edges", last


def case_several_directories():
    rc, out, err = run("split/one", "split/two")
    assert rc == 1, (rc, out, err)
    assert "cycle: one/front.c -[back_fill]-> two/back.c -[front_take]-> one/front.c" in out, out
    # each directory alone has no cycle: it is the two taken as one graph that has
    for d in ("split/one", "split/two"):
        rc, out, err = run(d)
        assert rc == 0, (d, rc, out, err)


def case_order():
    rc, out, err = run("--order", "order/layers.h", "order")
    assert rc == 0, (rc, out, err)
    rc, out, err = run("--order", "order/layers_upside_down.h", "order")
    assert rc == 1, (rc, out, err)
    assert "upward call: upper.c -[lower_base]-> lower.c" in out, out
    # a file the list leaves out fails too
    rc, out, err = run("--order", "order/layers.h", "order", "nocycle")
    assert rc == 1 and "not in the list: nocycle/mid.c" in out, (rc, out, err)


def case_usage():
    rc, out, err = run()
    assert rc == 2 and "usage" in err, (rc, out, err)
    rc, out, err = run("no-such-dir")
    assert rc == 2 and "not a directory" in err, (rc, out, err)


def main():
    failed = 0
    for name, fn in sorted((n, f) for n, f in globals().items() if n.startswith("case_")):
        try:
            fn()
            print(f"ok   {name[5:]}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {name[5:]}: {e}")
    print(f"test_check_layers: {failed} failed" if failed else "test_check_layers: all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
