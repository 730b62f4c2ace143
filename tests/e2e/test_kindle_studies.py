"""Kindle's studies and trace images end to end: `prosper sim --study` (the dispatcher, its
refusals, the result contract) on one small workload per study, checked against `prosper sim`
run directly on the same trace; Kindle tuple export/import round trips of a real trace."""
import json
import os
import struct
import sys

import pytest

from conftest import BUILD, ROOT, prosper

sys.path.insert(0, os.path.join(ROOT, "python"))
from prosper import cmd_sim, kindle_study, study_hscc, study_sensitivity, study_ssp_interval  # noqa: E402


@pytest.fixture(scope="module")
def kv_trace(tmp_path_factory):
    """kv with a heap (10 MiB of records) past the LLC and 112 M instructions: one migration run."""
    d = tmp_path_factory.mktemp("kindle")
    return str(d), kindle_study.traced(str(d), "Ycsb_mem", ["kv", "50000", "300000"])


def contract(result, name, figures):
    assert result["study"] == name
    assert result["command"].startswith(f"bin/prosper sim --study {name}")
    assert {"date", "machine", "loadavg", "quick", "seconds"} <= set(result["made"])
    assert set(result["figures"]) == set(figures)
    for f in result["figures"].values():
        assert f["title"] and f["ours"] and f["paper"] and f["notes"]


def run_study(monkeypatch, tmp_path, module, name, workloads, sizes, workdir):
    """The dispatcher in-process on the given workloads (their traces already in workdir)."""
    monkeypatch.setattr(module, "WORKLOADS", workloads)
    monkeypatch.setattr(module, "SIZES", sizes)
    assert cmd_sim.study(["--study", name, "--quick", "--out", str(tmp_path)], workdir) == 0
    result = json.load(open(tmp_path / f"kindle_{name}.json"))
    md = open(tmp_path / f"kindle_{name}.md").read()
    assert result["command"] in md
    return result, md


def test_hscc_study_reports_what_the_simulator_measured(monkeypatch, tmp_path, kv_trace):
    work, trace = kv_trace
    result, md = run_study(monkeypatch, tmp_path, study_hscc, "hscc", {"Ycsb_mem": "kv"},
                           {"Ycsb_mem": (["50000", "300000"], None)}, work)
    contract(result, "hscc", ["kindle-fig6", "kindle-table5", "kindle-table6"])
    r = prosper("sim", trace, "--heap", "none-nvm,hscc-5,hscc-50", "--json")
    assert r.returncode == 0, r.stderr
    by = {x["heap"]: x for x in json.loads(r.stdout)["results"] if x["stack"] == "none-dram"}
    t5 = result["figures"]["kindle-table5"]["ours"][0]
    assert t5["Th-5 migrated"] == by["hscc-5"]["pages_migrated"] > 0
    assert t5["Th-50 migrated"] == by["hscc-50"]["pages_migrated"]
    assert result["figures"]["kindle-fig6"]["ours"][0]["Th-5"] == round(by["hscc-5"]["cycles"] / by["none-nvm"]["cycles"], 4)
    for row in result["figures"]["kindle-table6"]["ours"]:
        if row["page selection %"] is not None:
            assert abs(row["page selection %"] + row["page copy %"] - 100) < 0.02
    assert "37.35" in md  # the paper's Table VI beside ours


def test_ssp_interval_study_commits_less_with_wider_intervals(monkeypatch, tmp_path, kv_trace):
    work, trace = kv_trace
    result, md = run_study(monkeypatch, tmp_path, study_ssp_interval, "ssp-interval", {"Ycsb_mem": "kv"},
                           {"Ycsb_mem": (["50000", "300000"], None)}, work)
    contract(result, "ssp-interval", ["kindle-fig5"])
    row = result["figures"]["kindle-fig5"]["ours"][0]
    # 10 ms boundaries are 1 ms boundaries: every line written back at 10 ms is written back at 1 ms
    assert row["commits 1 ms"] >= row["commits 5 ms"] >= row["commits 10 ms"] >= 1
    assert row["clwb 1 ms"] >= row["clwb 10 ms"] > 0
    r = prosper("sim", trace, "--heap", "none-nvm,ssp-1ms", "--interval-ms", "5", "--json")
    by = {x["heap"]: x for x in json.loads(r.stdout)["results"] if x["stack"] == "none-dram"}
    assert row["5 ms"] == round(by["ssp-1ms"]["cycles"] / by["none-nvm"]["cycles"], 4)
    assert "~3x" in md


def test_sensitivity_study_moves_the_ratio_its_constant_drives(monkeypatch, tmp_path, kv_trace):
    """One program and one constant per figure: the table's timing.conf row is what `prosper sim`
    says of the same trace, and SSP-10us's wake-up cost, halved and doubled, moves SSP-10us /
    Prosper down and up (SSP pays it every 10 us, Prosper never)."""
    work, trace = kv_trace
    monkeypatch.setattr(study_sensitivity, "FIG8_QUICK", {"Sparse": "full"})
    monkeypatch.setattr(study_sensitivity, "FIG8_PARAMS", ["thread_wakeup_ns"])
    monkeypatch.setattr(study_sensitivity, "HSCC_BENCHMARKS", ["Ycsb_mem"])
    monkeypatch.setattr(study_hscc, "SIZES", {"Ycsb_mem": (["50000", "300000"], None)})
    monkeypatch.setattr(study_sensitivity, "HSCC_PARAMS", ["hscc_dram_pages"])
    monkeypatch.setattr(study_sensitivity, "PAGETABLE_PARAMS", ["rebuild_list_visit_instructions"])
    monkeypatch.setattr(study_sensitivity, "PAGETABLE_PATTERNS", {True: [("8 MB", "seq:8M"), ("32 MB", "seq:32M")]})
    assert cmd_sim.study(["--study", "sensitivity", "--quick", "--out", str(tmp_path)], work) == 0
    result = json.load(open(tmp_path / "sim_sensitivity.json"))
    md = open(tmp_path / "sim_sensitivity.md").read()
    assert result["command"] in md and "2.14x average" in md
    contract(result, "sensitivity", ["fig8-sensitivity", "table5-sensitivity", "pagetable-sensitivity"])
    base, wake = result["figures"]["fig8-sensitivity"]["ours"]
    assert base["parameter"] == "(timing.conf)" and wake["parameter"] == "thread_wakeup_ns" and wake["value"] == "500"
    sparse = os.path.join(work, "Sparse-" + "-".join(["sparse", "2000"]) + ".trace")
    r = prosper("sim", sparse, "--stack", "ssp-10us,prosper", "--json")
    assert r.returncode == 0, r.stderr
    n = {x["stack"]: x["normalized"] for x in json.loads(r.stdout)["results"] if x["heap"] == "none-dram"}
    assert base["SSP-10us / Prosper at x0.5"] == round(n["ssp-10us"] / n["prosper"], 2)
    key = "SSP-10us / Prosper at x"
    assert wake[key + "0.5"] < base[key + "0.5"] < wake[key + "2"], (wake, base)
    hbase, hpages = result["figures"]["table5-sensitivity"]["ours"]
    assert hpages["parameter"] == "hscc_dram_pages"
    r = prosper("sim", trace, "--heap", "hscc-5,hscc-50", "--json")
    by = {x["heap"]: x["pages_migrated"] for x in json.loads(r.stdout)["results"] if x["stack"] == "none-dram"}
    assert by["hscc-5"] > 0
    assert hbase["Th-5 / Th-50 (Ycsb_mem) at x2"] == study_sensitivity.ratio(by["hscc-5"], by["hscc-50"])
    # Kindle's rebuild pays its list's node visits: their cost moves rebuild / persistent with it
    pbase, visit = result["figures"]["pagetable-sensitivity"]["ours"]
    assert visit["parameter"] == "rebuild_list_visit_instructions" and visit["value"] == "17"
    key = "rebuild / persistent (32 MB) at x"
    assert visit[key + "0.5"] < pbase[key + "0.5"] < visit[key + "2"], (visit, pbase)


def test_study_refusals_exit_2(tmp_path):
    for args, needle in [(["--study", "no-such"], "module prosper.study_no_such is missing"),
                         (["--study", "../x"], "not a study name"),
                         (["--study", "hscc", "--bogus"], "unrecognized arguments"),
                         (["--study", "hscc", "--out", str(tmp_path / "none")], "no such directory")]:
        r = prosper("sim", *args)
        assert r.returncode == 2 and needle in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


def tuples(path):
    b = open(path, "rb").read()
    assert len(b) % 28 == 0
    return [struct.unpack_from("<IIc3xi6s2xi", b, i) for i in range(0, len(b), 28)]


def test_kindle_export_round_trips_a_real_trace(tmp_path, kv_trace):
    _, trace = kv_trace
    img, back, img2 = tmp_path / "kv.img", tmp_path / "kv-back.trace", tmp_path / "kv2.img"
    r = prosper("sim", "--export-kindle", trace, img)
    assert r.returncode == 0, r.stderr
    t = tuples(img)
    assert t[-1][2] == b"Y" and all(x[2] in (b"R", b"W") for x in t[:-1])
    assert {x[4].rstrip(b"\0") for x in t[:-1]} == {b"S", b"H"}
    assert [x[0] for x in t[:-1]] == sorted(x[0] for x in t[:-1])  # intervals never go back
    run = json.loads(prosper("sim", trace, "--json").stdout)
    skipped = int(r.stderr.split("; ")[1].split()[0])
    assert len(t) - 1 + skipped == run["events"]
    assert prosper("sim", "--import-kindle", img, back).returncode == 0
    assert prosper("sim", "--export-kindle", back, img2).returncode == 0
    assert open(img, "rb").read() == open(img2, "rb").read()
    # refusals: a missing trace, a cut image
    r = prosper("sim", "--export-kindle", tmp_path / "missing.trace", img2)
    assert r.returncode == 2 and "cannot open" in r.stderr
    cut = tmp_path / "cut.img"
    cut.write_bytes(open(img, "rb").read()[:28 * 5 + 3])
    r = prosper("sim", "--import-kindle", cut, tmp_path / "cut.trace")
    assert r.returncode == 2 and "record 5: truncated" in r.stderr


def test_kindle_studies_script_passes_names_and_refuses_options():
    import subprocess
    script = os.path.join(ROOT, "bench", "scripts", "kindle_studies.sh")
    r = subprocess.run([script, "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr
    r = subprocess.run([script, "--quick", "no-such"], capture_output=True, text=True)
    assert r.returncode == 2 and "module prosper.study_no_such is missing" in r.stderr
