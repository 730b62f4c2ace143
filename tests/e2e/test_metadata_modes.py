"""prosper run --metadata log|rewrite: a program that maps and unmaps memory between checkpoints,
killed with SIGKILL at random instants and resumed, ends with the output of a native run in both
modes, also when a resume switches the mode; the log mode really logs (VMA adds, removes,
changes as records) and a damaged metadata region is refused with one line and exit code 2."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, PROSPER, kill_at_epoch, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
MAPPER = os.path.join(BUILD, "tests", "supervisor", "mapper")
ROUNDS = "120"


@pytest.mark.parametrize("mode", ["rewrite", "log"])
def test_mapper_survives_kills_in_both_modes(mode, pool_dir):
    r = prosper("torture", "--kills", 12 if not LONG else 40, "--seed", 3, "--metadata", mode, "--json",
                "--pool-dir", pool_dir, "--", MAPPER, ROUNDS, timeout=600)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["kills"] >= 1


def _run(args, cwd, out, **kw):
    """args[0] is run or resume: at the fixed cadence (--max-overhead 0), so that the modes are
    compared over the same checkpoints"""
    return subprocess.run([PROSPER, args[0], "--max-overhead", "0", *args[1:]], cwd=cwd, stdout=out,
                          stderr=subprocess.PIPE, text=False, **kw)


def _killed_run(pool, mode, cwd, out, epoch=4):
    """prosper run --metadata mode, killed once the pool has committed `epoch`."""
    p = subprocess.Popen([PROSPER, "run", "--max-overhead", "0", "--metadata", mode, "--pool", pool, "--", MAPPER, ROUNDS], cwd=cwd,
                         stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    kill_at_epoch(p, pool, epoch)


@pytest.mark.parametrize("first,then", [("log", "rewrite"), ("rewrite", "log")])
def test_resume_may_switch_the_mode(first, then, tmp_path, pool_dir):
    native = subprocess.run([MAPPER, ROUNDS], capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "m.prosper")
    out_path = tmp_path / "out"
    with open(out_path, "wb") as out:
        _killed_run(pool, first, tmp_path, out)
        stats = tmp_path / "s.json"
        r = _run(["resume", "--metadata", then, "--pool", pool, "--stats-json", stats], tmp_path, out, timeout=120)
    assert r.returncode == 0, r.stderr
    assert out_path.read_bytes() == native
    st = json.loads(stats.read_text())
    assert st["metadata_mode"] == then and st["resumed"] and st["checkpoints"] >= 1
    if then == "log":
        # the first checkpoint after a resume lays the region out whole; later ones log changes
        assert st["metadata_rebuilds"] >= 1 and st["metadata_records"] > st["metadata_rebuilds"]
        assert st["vma_adds"] > 0 and st["vma_removes"] > 0
    else:
        assert st["metadata_records"] == 0 and st["metadata_bytes"] > 0


def test_log_mode_writes_less_than_rewrite_for_few_changes(tmp_path, pool_dir):
    """Bytes, not time: per checkpoint the log holds the register context and the changed slots,
    the rewrite the whole blob (environment, every mapping, every file)."""
    per = {}
    for mode in ("rewrite", "log"):
        stats = tmp_path / f"{mode}.json"
        with open(tmp_path / f"{mode}.out", "wb") as out:
            r = _run(["run", "--metadata", mode, "--pool", os.path.join(pool_dir, f"{mode}.prosper"),
                      "--stats-json", stats, "--", MAPPER, "60"], tmp_path, out, timeout=120)
        assert r.returncode == 0, r.stderr
        st = json.loads(stats.read_text())
        assert st["checkpoints"] >= 2
        per[mode] = st["metadata_bytes"] / st["checkpoints"]
    assert per["log"] < per["rewrite"], per


def test_a_damaged_metadata_region_is_refused(tmp_path, pool_dir):
    pool = os.path.join(pool_dir, "d.prosper")
    with open(tmp_path / "out", "wb") as out:
        _killed_run(pool, "log", tmp_path, out)
    info = json.loads(prosper("inspect", "--json", pool).stdout)
    meta = [r for r in info["regions"] if r["name"] == "metadata"]
    assert len(meta) == 1 and meta[0]["mode"] == "redo"
    data_off = info["file_bytes"] - info["nslots"] * info["seg_size"]
    # the image's tables (the log re-applied at open restores only what it names: the context)
    slot = meta[0]["segments"][0]["main"]
    with open(pool, "r+b") as f:
        f.seek(data_off + slot * info["seg_size"] + 4096)
        f.write(b"\xff" * min(info["seg_size"] - 4096, meta[0]["length"] - 4096))
    r = prosper("resume", "--pool", pool, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "metadata" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_metadata_benchmark_runs(tmp_path, pool_dir):
    """bench/scripts/metadata_modes.py on a tiny configuration: every K and mode measured, files
    written, and the bytes (not the times) behave: the log logs the VMA changes it was given."""
    script = os.path.join(os.path.dirname(PROSPER), "..", "bench", "scripts", "metadata_modes.py")
    r = subprocess.run([sys.executable, script, "--ks", "0,8", "--n", "16", "--ticks", "12", "--interval", "20",
                        "--reps", "1", "--pool-dir", pool_dir, "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, PROSPER_BUILD=BUILD))
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "metadata_modes.json").read_text())
    rows = {(x["k"], x["mode"]): x for x in res["rows"]}
    assert set(rows) == {(0, "rewrite"), (0, "log"), (8, "rewrite"), (8, "log")}
    assert all(x["checkpoints"] >= 2 for x in rows.values())
    assert rows[(0, "log")]["vma_changes_per_ckpt"] == 0 and rows[(8, "log")]["vma_changes_per_ckpt"] > 0
    assert rows[(8, "log")]["records_per_ckpt"] > rows[(0, "log")]["records_per_ckpt"]
    assert rows[(0, "rewrite")]["records_per_ckpt"] == 0
    assert "| 8 | log |" in (tmp_path / "metadata_modes.md").read_text()


def test_a_bad_mode_is_refused(tmp_path):
    for cmd in (["run", "--metadata", "journal", "--", "/bin/true"], ["resume", "--metadata", ""]):
        r = prosper(*cmd, cwd=tmp_path)
        assert r.returncode == 2 and "--metadata is log or rewrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
