"""The benchmark programs are deterministic: small sizes exit 0 with one checksum line, twice
the same, and the checksum depends on the work done."""
import os
import re
import subprocess

import pytest

from conftest import BUILD

SMALL = {
    "random": ["3"], "stream": ["20"], "sparse": ["50"], "quicksort": ["1"], "normal": ["2000"],
    "poisson": ["500"], "recursive": ["4", "1"], "pr": ["8"], "sssp": ["8"], "kv": ["1000", "500"],
}
BIGGER = {
    "random": ["4"], "stream": ["21"], "sparse": ["51"], "quicksort": ["2"], "normal": ["2001"],
    "poisson": ["501"], "recursive": ["4", "2"], "pr": ["9"], "sssp": ["9"], "kv": ["1100", "500"],
}


def run(name, args):
    r = subprocess.run([os.path.join(BUILD, "bench", name), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"checksum 0x[0-9a-f]{16}\n", r.stdout), r.stdout
    return r.stdout


@pytest.mark.parametrize("name", sorted(SMALL))
def test_deterministic_and_input_dependent(name):
    a, b = run(name, SMALL[name]), run(name, SMALL[name])
    assert a == b
    assert run(name, BIGGER[name]) != a


def test_bad_arguments_are_usage_errors():
    for name, args in (("sparse", ["-3"]), ("recursive", ["5"]), ("stream", ["x"])):
        r = subprocess.run([os.path.join(BUILD, "bench", name), *args], capture_output=True, text=True)
        assert r.returncode == 2 and "usage" in r.stderr
