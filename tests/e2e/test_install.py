"""The installed tool, as a user gets it: `make install PREFIX=DIR` from a fresh clone, the clone
deleted, then only what is under DIR used -- `prosper run`/kill -9/`resume`, `torture`, `hw`,
`trace`, `sim`, `prosper-sim`, man pages and completion, and a crpm, an asl and an nvm client
built through pkg-config.  `make uninstall` leaves nothing of ours behind.

PROSPER_INSTALLED=DIR runs the same checks against a tree installed otherwise (the Debian
package: scripts/deb-test), without building anything."""
import json
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import ROOT

CLIENTS = {"ring.c": "lib/crpm/examples/ring.c", "document.cpp": "lib/asl/examples/document.cpp",
           "nvmuser.c": "tests/supervisor/nvmuser.c"}
# Nothing of the source tree or of the developer's environment may leak into the installed runs.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("PROSPER_", "PYTHON", "VIRTUAL_ENV", "PKG_CONFIG"))}


@pytest.fixture(scope="module")
def installed():
    """(prefix, env, user dir): an installed tree whose source is gone, and a user's directory
    holding copies of the example clients.  Anyone may read the tree, as under /usr."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="prosper-install-"))
    os.chmod(base, 0o755)
    yield from _install(base)
    shutil.rmtree(base, ignore_errors=True)


def _install(base):
    user = base / "user"
    user.mkdir()
    given = os.environ.get("PROSPER_INSTALLED")
    if given:
        prefix = given
        for name, rel in CLIENTS.items():
            shutil.copy(os.path.join(ROOT, rel), user / name)
    else:
        clone, prefix = base / "clone", str(base / "prefix")
        subprocess.run(["git", "clone", "-q", ROOT, str(clone)], check=True)
        r = subprocess.run(["make", "-C", str(clone), "install", f"PREFIX={prefix}"], env=CLEAN_ENV,
                           capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        for name, rel in CLIENTS.items():
            shutil.copy(clone / rel, user / name)
        shutil.copy(clone / "build" / "install_manifest.txt", base / "install_manifest.txt")  # for uninstall
        shutil.rmtree(clone)
    env = dict(CLEAN_ENV, PATH=f"{prefix}/bin:/usr/bin:/bin", PKG_CONFIG_PATH=f"{prefix}/lib/pkgconfig")
    env.pop("PKG_CONFIG_PATH") if prefix == "/usr" else None
    yield prefix, env, user


def run(installed, *argv, **kw):
    prefix, env, user = installed
    if "stdout" in kw:
        kw.setdefault("stderr", subprocess.PIPE)
    else:
        kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([str(a) for a in argv], env=env, cwd=user, **kw)


def bench(installed, name):
    return os.path.join(installed[0], "lib", "prosper", "build", "bench", name)


def pkg_config(installed, *pkgs):
    r = run(installed, "pkg-config", "--cflags", "--libs", *pkgs)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_the_installed_front_end_is_self_contained(installed):
    prefix, env, user = installed
    r = run(installed, "prosper", "--version")
    assert r.returncode == 0, r.stderr
    with open(os.path.join(ROOT, "VERSION")) as f:
        assert r.stdout.strip() == f"prosper {f.read().strip()}"
    assert os.path.realpath(shutil.which("prosper", path=env["PATH"])).startswith(os.path.realpath(prefix))
    r = run(installed, "prosper", "--help")
    assert r.returncode == 0 and "run" in r.stdout and "eval" in r.stdout
    # the report's plotting works from the installed packages, not from a developer's virtualenv
    r = run(installed, "prosper", "eval", "--help")
    assert r.returncode == 0, r.stderr
    man1 = os.path.join(prefix, "share", "man", "man1")
    pages = {f.split(".")[0]: f for f in os.listdir(man1) if f.startswith("prosper")}  # a package gzips them
    for page in ["prosper", "prosper-run", "prosper-sim", "prosper-cc", "prosper-c++", "prosper-eval"]:
        assert page in pages, page
    r = run(installed, "man", "-l", os.path.join(man1, pages["prosper-run"]))
    assert r.returncode == 0 and "--durable-every" in r.stdout
    completion = os.path.join(prefix, "share", "bash-completion", "completions", "prosper")
    r = run(installed, "bash", "-c", f"source {completion}; COMP_WORDS=(prosper re); COMP_CWORD=1; "
            "_prosper; echo ${COMPREPLY[@]}")
    assert r.stdout.split() == ["resume"], r.stdout + r.stderr


def wait_epoch(installed, pool, epoch, p):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        r = run(installed, "prosper", "inspect", "--json", pool)
        if r.returncode == 0 and json.loads(r.stdout)["epoch"] >= epoch:
            return
        time.sleep(0.02)
    pytest.fail(f"epoch {epoch} was not committed before the program ended: {p.stderr.read().decode()}")


def test_run_kill_resume_of_a_shell_script(installed, pool_dir):
    """A `#!/usr/bin/env sh` script that computes in the shell and now and then pipes into bc:
    killed with its whole process group, resumed with its output appended to the same file --
    byte-identical to a native run."""
    prefix, env, user = installed
    script = user / "count.sh"
    script.write_text("#!/usr/bin/env sh\ni=0\nwhile [ $i -lt 3000 ]; do\n"
                      "  i=$((i + 1)); s=0; j=0\n"
                      "  while [ $j -lt 200 ]; do s=$((s + j * i)); j=$((j + 1)); done\n"
                      "  echo \"$i $s\"\n"
                      "  [ $((i % 500)) -ne 0 ] || echo \"$i^3\" | bc\n"
                      "done\n")
    script.chmod(0o755)
    native = run(installed, script)
    pool = os.path.join(pool_dir, "count.prosper")
    out = user / "count.out"
    with open(out, "w") as f:
        p = subprocess.Popen(["prosper", "run", "--pool", pool, "--", str(script)], stdout=f,
                             stderr=subprocess.PIPE, env=env, cwd=user, start_new_session=True)
        wait_epoch(installed, pool, 20, p)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    time.sleep(0.05)
    with open(out, "a") as f:
        r = run(installed, "prosper", "resume", "--pool", pool, stdout=f)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == native.stdout


def test_torture_of_an_nvm_client_built_with_pkg_config(installed):
    exe = installed[2] / "nvmuser"
    r = run(installed, "cc", "-O2", "nvmuser.c", *pkg_config(installed, "prosper-nvm"), "-lpthread", "-o", exe)
    assert r.returncode == 0, r.stderr
    r = run(installed, "prosper", "torture", "--kills", 5, "--seed", 3, "--json", "--", exe, "mixed", 2, 800)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 2


def test_crpm_client_built_with_pkg_config_and_prosper_cc(installed, pool_dir):
    user = installed[2]
    for exe, cmd in [("ring_plain", ["cc", "-O2", "ring.c", *pkg_config(installed, "prosper-crpm")]),
                     ("ring_inst", ["prosper-cc", "-O2", "ring.c"])]:
        r = run(installed, *cmd, "-o", user / exe)
        assert r.returncode == 0, r.stderr
        path = os.path.join(pool_dir, f"{exe}.crpm")
        p = subprocess.Popen([user / exe, path, "default", "run"], stdout=subprocess.PIPE, env=installed[1])
        time.sleep(0.3)
        p.send_signal(signal.SIGKILL)
        lines = p.communicate()[0].decode().split("\n")[:-1]
        assert lines, f"{exe} printed no checkpoint in 0.3 s"
        r = run(installed, user / exe, path, "default", "check")
        assert r.returncode == 0, r.stdout + r.stderr
        assert int(r.stdout.split()[0]) in (int(lines[-1]), int(lines[-1]) + 1)


def test_asl_client_built_with_pkg_config(installed, pool_dir):
    user = installed[2]
    r = run(installed, "c++", "-O2", "document.cpp", *pkg_config(installed, "prosper-asl"), "-o", user / "document")
    assert r.returncode == 0, r.stderr
    rt = os.path.join(pool_dir, "doc")
    for word in ["hello", "world"]:
        assert run(installed, user / "document", rt, word).returncode == 0
    r = run(installed, user / "document", rt)
    assert r.returncode == 0 and r.stdout.startswith("hello\nworld\n"), r.stdout + r.stderr


def test_hw_trace_and_sim(installed):
    user = installed[2]
    qs = bench(installed, "quicksort")
    r = run(installed, "prosper", "hw", "--json", "--", qs, 5)
    assert r.returncode == 0, r.stderr
    hw = json.loads(r.stdout)
    assert hw["checkpoints"] > 0 and hw["exact_bytes_per_ckpt"] > 0
    trace = user / "qs.trace"
    r = run(installed, "prosper", "trace", "--out", trace, "--", qs, 3)
    assert r.returncode == 0 and trace.stat().st_size > 0, r.stderr
    r = run(installed, "prosper", "sim", trace, "--stack", "prosper,dirtybit", "--json")
    assert r.returncode == 0, r.stderr
    assert "prosper" in r.stdout and "dirtybit" in r.stdout
    r = run(installed, "prosper-sim", "--list")
    assert r.returncode == 0 and "romulus" in r.stdout


def test_eval_runs_from_the_installed_tree(installed):
    """The bench scripts and programs `eval` runs are installed too: one experiment, its report,
    and the screenshot."""
    out = installed[2] / "eval"
    r = run(installed, "prosper", "eval", "--tiny", "--only", "torture", "--out", out, "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    [torture] = [f for f in res["figures"] if f["id"] == "ours-torture"]
    assert torture["status"] == "ok" and torture["verdict"] == "matches", torture
    assert (out / "report.html").is_file()


def _tree_state(prefix):
    return {os.path.join(d, f): (os.lstat(os.path.join(d, f)).st_mtime_ns, os.lstat(os.path.join(d, f)).st_size)
            for d, dirs, files in os.walk(prefix) for f in files + dirs}


def test_an_ordinary_user_runs_and_resumes_from_the_installed_tree(installed):
    """`nobody`, with the installed tree on its PATH: run, kill -9 of the group, resume appended to
    the same file -- byte-identical to a native run; and nothing under the prefix was written,
    by that user or by root's runs before.  At the fixed cadence: the kill waits for checkpoints
    that the budget would space out in a program this short."""
    prefix, env, _ = installed
    before = _tree_state(prefix)
    d = tempfile.mkdtemp(prefix="prosper-nobody-")
    u = pwd.getpwnam("nobody")
    os.chown(d, u.pw_uid, u.pw_gid)
    nobody = ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups"]
    try:
        prog = [bench(installed, "sssp")]
        native = subprocess.run(prog, capture_output=True, check=True).stdout
        pool, out = os.path.join(d, "sssp.prosper"), os.path.join(d, "out")
        p = subprocess.Popen([*nobody, "sh", "-c", f'exec prosper run --max-overhead 0 --pool {pool} -- "$@" > {out}', "sh", *prog],
                             stderr=subprocess.PIPE, env=env, cwd=d, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            r = subprocess.run([*nobody, "prosper", "inspect", "--json", pool], env=env, cwd=d, capture_output=True,
                               text=True)
            info = json.loads(r.stdout) if r.returncode == 0 else None
            if info and (info["fast_pool"] or info)["epoch"] >= 5:
                break
            time.sleep(0.02)
        assert p.poll() is None, p.stderr.read().decode()
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        time.sleep(0.05)
        r = subprocess.run([*nobody, "sh", "-c", f"exec prosper resume --pool {pool} >> {out}"], env=env, cwd=d,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert open(out, "rb").read() == native
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert _tree_state(prefix) == before


def test_uninstall_leaves_nothing_of_ours(installed):
    """Last: `make uninstall` (scripts/uninstall with the install's manifest) empties the prefix."""
    if os.environ.get("PROSPER_INSTALLED"):
        pytest.skip("the tree was installed by a package manager")
    prefix = installed[0]
    manifest = installed[2].parent / "install_manifest.txt"
    r = subprocess.run([os.path.join(ROOT, "scripts", "uninstall"), str(manifest)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    left = [os.path.join(d, f) for d, dirs, files in os.walk(prefix) for f in files + dirs
            if not os.path.isdir(os.path.join(d, f)) or os.path.islink(os.path.join(d, f))]
    assert left == []
    assert not os.path.exists(os.path.join(prefix, "lib", "prosper"))
