"""crpm for users: `make install PREFIX=DIR` gives headers, libraries, compiler wrappers and
prosper-crpm.pc; a C program using only the public API builds with pkg-config (or prosper-cc),
survives SIGKILL at random instants and recovers exactly its last checkpoint, in both modes."""
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import BUILD, ROOT

RING = os.path.join(ROOT, "lib", "crpm", "examples", "ring.c")
KILLS = 40 if os.environ.get("PROSPER_LONG") else 6


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not os.path.exists(os.path.join(BUILD, "lib", "crpm", "libprosper-crpm.so")):
        pytest.fail("build first: make build")
    d = tmp_path_factory.mktemp("prefix")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def test_install_layout(prefix):
    for f in ["include/prosper/crpm.h", "include/prosper/crpm.hpp", "lib/libprosper-crpm.so",
              "lib/pkgconfig/prosper-crpm.pc", "bin/prosper-cc", "bin/prosper-c++"]:
        assert os.path.exists(prefix / f), f
    pc = (prefix / "lib/pkgconfig/prosper-crpm.pc").read_text()
    assert f"prefix={prefix}" in pc
    if os.path.exists(os.path.join(BUILD, "lib", "crpm", "libprosper-crpm-mpi.so")):
        assert os.path.exists(prefix / "lib/libprosper-crpm-mpi.so")
        assert os.path.exists(prefix / "lib/pkgconfig/prosper-crpm-mpi.pc")


def build(prefix, tmp_path, instrumented):
    exe = str(tmp_path / ("ring_inst" if instrumented else "ring_plain"))
    if instrumented:
        cmd = [str(prefix / "bin/prosper-cc"), "-O2", RING, "-o", exe]
    else:
        env_pc = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib/pkgconfig"))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "prosper-crpm"], env=env_pc,
                               capture_output=True, text=True, check=True).stdout.split()
        cmd = ["cc", "-O2", RING, *flags, "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.mark.parametrize("instrumented", [False, True], ids=["plain", "prosper-cc"])
@pytest.mark.parametrize("mode", ["default", "buffered"])
def test_sigkill_recovers_last_checkpoint(prefix, tmp_path, pool_dir, mode, instrumented):
    exe = build(prefix, tmp_path, instrumented)
    path = os.path.join(pool_dir, f"ring-{mode}.crpm")
    rng = random.Random()
    last = 0
    for i in range(KILLS):
        p = subprocess.Popen([exe, path, mode, "run"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.005, 0.12))
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate()
        assert p.returncode == -signal.SIGKILL, err.decode()
        lines = out.decode().split("\n")[:-1]  # complete lines only
        if lines:
            last = int(lines[-1])
        r = subprocess.run([exe, path, mode, "check"], capture_output=True, text=True)
        assert r.returncode == 0, (r.stdout, r.stderr)
        n = int(r.stdout.split()[0])
        assert n in (last, last + 1), f"kill {i}: recovered {n}, last checkpoint reported {last}"
        last = n
    assert last > 0
