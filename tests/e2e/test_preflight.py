"""What the system must allow is tried before anything starts (src/supervisor/base/preflight.h):
where it is forbidden -- ptrace, userfaultfd, a pid namespace of the program's own, or an
ordinary user running a set-user-ID program -- `prosper run` refuses with its stable code, exit 2,
and starts nothing: no program ran, no pool was made.  Before, the program ran on unprotected
after "checkpointing stopped".  The denials are made real: a seccomp filter in the test's own
process (inherited by prosper) returns EPERM for the call, and an ordinary user is the system's
`nobody`."""
import json
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import PROSPER

# A seccomp filter that makes the listed system calls fail with EPERM, then exec: the denial a
# security policy would give, for this process and what it starts.
DENY = r"""
import ctypes, os, struct, sys
nrs = [int(n) for n in sys.argv[1].split(",")]
ld, jeq, ret = 0x20, 0x15, 0x06
prog = struct.pack("HBBI", ld, 0, 0, 0)  # the call's number
for nr in nrs:
    prog += struct.pack("HBBI", jeq, 0, 1, nr) + struct.pack("HBBI", ret, 0, 0, 0x00050000 | 1)  # ERRNO | EPERM
prog += struct.pack("HBBI", ret, 0, 0, 0x7FFF0000)  # ALLOW
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fp), 0, 0):  # NO_NEW_PRIVS, SECCOMP filter
    raise OSError(ctypes.get_errno(), "seccomp")
os.execv(sys.argv[2], sys.argv[2:])
"""


def refused_run(tmp, argv_prefix=(), program=("sh", "-c", "touch marker"), env=None):
    """`prosper run --json` of a program that would leave a file `marker`: its result, its refusal
    (the JSON line of stderr) and whether anything was started or made."""
    pool = os.path.join(tmp, "p.prosper")
    r = subprocess.run([*argv_prefix, PROSPER, "run", "--json", "--pool", pool, "--", *program], cwd=tmp,
                       capture_output=True, text=True, timeout=60, env=env)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("{")]
    refusal = json.loads(lines[-1]) if lines else {}
    left = sorted(n for n in os.listdir(tmp) if n not in ("deny.py", "suid-true"))
    return r, refusal, left


@pytest.mark.parametrize("call,nr,code", [("ptrace", 101, "ptrace-denied"),
                                          ("userfaultfd", 323, "no-userfaultfd"),
                                          ("unshare", 272, "no-pid-namespace")])
def test_a_denied_call_is_a_refusal_before_anything_starts(tmp_path, call, nr, code):
    (tmp_path / "deny.py").write_text(DENY)
    r, refusal, left = refused_run(str(tmp_path), ("python3", str(tmp_path / "deny.py"), str(nr)))
    assert r.returncode == 2, r.stderr
    assert refusal.get("refused") == code, r.stderr
    assert len(r.stderr.splitlines()) == 2, r.stderr  # the reason, and its JSON line
    assert left == [], left  # no marker (the program never ran), no pool


def test_the_same_run_with_nothing_denied_is_checkpointed(tmp_path):
    """The same program, nothing denied: it runs, checkpointed (the tests above are not refusals of
    everything)."""
    (tmp_path / "deny.py").write_text(DENY)
    r, refusal, left = refused_run(str(tmp_path), ("python3", str(tmp_path / "deny.py"), "9999"))
    assert r.returncode == 0, r.stderr
    assert refusal == {}
    assert "marker" in left and "p.prosper" in left


@pytest.fixture
def open_dir():
    """A folder the system's `nobody` may write in."""
    d = tempfile.mkdtemp(prefix="prosper-nobody-")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")


@pytest.mark.parametrize("call,nr,code", [("userfaultfd", 323, "no-userfaultfd"),
                                          ("unshare", 272, "no-pid-namespace")])
def test_an_ordinary_user_denied_a_call_is_refused_before_anything_starts(open_dir, call, nr, code):
    """As `nobody`, where the system forbids its userfaultfd (of user mode only too) or its user
    namespace: the refusal names the setting, nothing started (test_ordinary_user.py: the same
    user runs and resumes where nothing is denied)."""
    deny = os.path.join(open_dir, "deny.py")
    with open(deny, "w") as f:
        f.write(DENY)
    r, refusal, left = refused_run(open_dir, (*NOBODY, "/usr/bin/python3", deny, str(nr)))
    assert r.returncode == 2, r.stderr
    assert refusal.get("refused") == code, r.stderr
    assert left == [], left


def test_a_setuid_program_of_another_user_is_refused(open_dir):
    """`nobody` running a set-user-ID program of root's: under ptrace it would run without that
    privilege, unlike natively."""
    suid = os.path.join(open_dir, "suid-true")
    shutil.copy("/bin/true", suid)
    os.chmod(suid, 0o4755)
    assert os.stat(suid).st_mode & stat.S_ISUID
    r, refusal, left = refused_run(open_dir, NOBODY, program=(suid,))
    assert r.returncode == 2, r.stderr
    assert refusal.get("refused") == "setuid-program", r.stderr
    assert left == [], left
