"""prosper eval: every figure is present or explicitly missing, and every number of ours comes
from a file written in that run (nothing is copied in from elsewhere)."""
import json
import os
import subprocess
import sys
import time
from html import escape

import pytest

from conftest import PROSPER, ROOT

sys.path.insert(0, os.path.join(ROOT, "python"))
from prosper.eval_experiments import FIGURES  # noqa: E402  (the report's table of contents)
from prosper import browser  # noqa: E402


def values(node, out):
    """Every number and boolean in a JSON document."""
    if isinstance(node, dict):
        for v in node.values():
            values(v, out)
    elif isinstance(node, list):
        for v in node:
            values(v, out)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        out.add(float(node))
    elif isinstance(node, bool):
        out.add(node)
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "r"
    start = time.time()
    p = subprocess.run([PROSPER, "eval", "--tiny", "--json", "--out", str(out)], capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    # --json: the summary of what was written, on stdout
    j = json.loads(p.stdout)
    assert j["results_json"] == str(out / "results.json") and os.path.exists(j["report_html"])
    assert j["figures"] == len(results["figures"]) == j["figures_ok"] + j["figures_missing"] and j["failed"] == []
    return out, start, results


def test_every_figure_present_or_marked_missing(report):
    out, _, r = report
    ids = [f["id"] for f in r["figures"]]
    assert ids[:len(FIGURES)] == [fid for fid, *_ in FIGURES]
    html = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    for f in r["figures"]:
        assert f["id"] in html and f["id"] in md
        if f["status"] == "ok":
            assert f["ours"]["rows"], f["id"]
            assert f["paper"] and f["command"] and f["source"], f["id"]
            if f.get("plot"):
                assert (out / f["plot"]).stat().st_size > 0
        else:
            assert f["status"] == "missing" and f["reason"], f["id"]
            assert f["ours"] is None  # never filled from elsewhere
            assert "missing: " + escape(f["reason"]) in html, f["id"]
    assert sum(f["status"] == "ok" for f in r["figures"]) >= 20
    for e in r["experiments"]:
        assert e["status"] in ("ok", "missing"), e  # nothing that exists failed


def test_every_number_comes_from_this_runs_files(report):
    out, start, r = report
    for f in r["figures"]:
        if f["status"] != "ok":
            continue
        src = out / f["source"]
        assert src.is_file() and src.stat().st_mtime >= start - 1, f["source"]
        assert os.path.commonpath([str(src.resolve()), str((out / "raw").resolve())]) == str((out / "raw").resolve())
        found = values(json.loads(src.read_text()), set())
        for row in f["ours"]["rows"]:
            for v in row:
                if isinstance(v, bool):
                    assert v in found, (f["id"], v)
                elif isinstance(v, (int, float)):
                    assert float(v) in found, (f["id"], v, f["source"])


def test_refuses_a_directory_that_holds_something_else(tmp_path):
    keep = tmp_path / "precious.txt"
    keep.write_text("mine")
    p = subprocess.run([PROSPER, "eval", "--tiny", "--out", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and "not empty" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert keep.read_text() == "mine"
    p = subprocess.run([PROSPER, "eval", "--only", "nosuch", "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown experiment" in p.stderr


def test_an_experiment_that_wrote_results_but_exited_non_zero_is_a_problem(tmp_path, monkeypatch):
    """Its figures stay (they were read from this run's file), with the reason beside them, and the
    record says `problem`, which makes eval exit 1."""
    from prosper import cmd_eval, eval_experiments as ex
    fake = ex.Experiment("fake", "a run that half failed", "model",
                         lambda size, out: ["sh", "-c", f"echo '{{\"x\": 7}}' > {out}/fake.json; "
                                                        "echo 'FAILURE: one run' >&2; exit 1"],
                         ["fake.json"], {"fake.json": lambda d: {"fake-fig": (
                             {"columns": ["x"], "rows": [[d["x"]]]}, "paper text", "notes")}})
    monkeypatch.setattr(ex, "by_name", lambda: {"fake": fake})
    raw = tmp_path / "raw"
    raw.mkdir()
    rec = cmd_eval.run_one(fake, "tiny", str(raw))
    assert rec["status"] == "problem" and "exit code 1" in rec["reason"] and "FAILURE: one run" in rec["reason"]
    figs = {f["id"]: f for f in cmd_eval.collect_figures([rec], str(raw))}
    assert figs["fake-fig"]["status"] == "ok" and figs["fake-fig"]["ours"]["rows"] == [[7]]
    assert "reported a problem" in figs["fake-fig"]["notes"]


def test_every_figure_has_a_verdict_and_a_labelled_plot(report):
    out, _, r = report
    html = (out / "report.html").read_text()
    ylabels = {fid: y for fid, _, _, y in FIGURES}
    for f in r["figures"]:
        if f["status"] != "ok":
            continue
        assert f["verdict"] in ("matches", "same trend", "deviates", "not compared"), f["id"]
        assert f["verdict_reason"], f["id"]
        assert escape(f"Verdict: {f['verdict']} -- {f['verdict_reason']}") in html, f["id"]
        assert f.get("plot"), (f["id"], f.get("plot_error"))
        axes = f["plot_axes"]
        assert axes["x"] and axes["y"] == ylabels[f["id"]], f["id"]
        # the paper beside ours: a panel of its numbers or its statement as a note
        assert axes["paper"] in ("panel", "note"), f["id"]


def test_rows_at_quick_sizes_measure_something(report):
    """--tiny runs the tracker experiments at their --quick sizes (three programs): every row has
    at least 5 checkpoints and no row is all zeros."""
    _, _, r = report
    hw = [f for f in r["figures"] if f["status"] == "ok" and f["experiment"] == "hw"]
    assert len(hw) >= 5
    for f in hw:
        assert f["thin_rows"] == [], (f["id"], f["thin_rows"])


def test_the_report_in_a_browser(report, tmp_path):
    """Headless Chromium loads every image of report.html, every plot is a <figure> with a
    caption, and the run kept its screenshot; a broken image is noticed."""
    out, _, r = report
    seen = browser.inspect(str(out / "report.html"))
    plotted = [f for f in r["figures"] if f.get("plot")]
    assert len(seen["images"]) == len(plotted) >= 20
    assert all(i["loaded"] for i in seen["images"]), [i for i in seen["images"] if not i["loaded"]]
    assert [g["id"] for g in seen["figures"]] == [f"fig-{f['id']}" for f in plotted]
    for g, f in zip(seen["figures"], plotted):
        assert g["images"] == 1 and g["caption"].startswith(f"{f['id']}: ") and f["verdict"] in g["caption"].lower()
    assert r["screenshot"] == "screenshot.png", r.get("screenshot_missing")
    shot = (out / "screenshot.png").read_bytes()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20000
    # the check can fail: one plot truncated in a copy of the report
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("raw"))
    (copy / plotted[0]["plot"]).write_bytes(b"\x89PNG\r\n")
    seen = browser.inspect(str(copy / "report.html"))
    assert [i["src"] for i in seen["images"] if not i["loaded"]] == [plotted[0]["plot"]]
