"""eval_experiments -- what `prosper eval` runs, at which size, and which figures it reads back.

An experiment is one command that writes raw result files into the run's directory (RAW/<name>/);
a figure is read from exactly one of those files by a small function here.  The invariants the
report test checks:
  - every number in a figure's `ours` table is a number found in its `source` file, which was
    written during this run (derived quantities such as ratios are computed only when rendering);
  - a figure whose experiment failed, was skipped or does not exist yet is listed with
    status "missing" and the reason, never filled from elsewhere;
  - the paper's values are quoted from the papers (facts), in `paper`, never mixed into `ours`.

Sizes: `tiny` (seconds per experiment; for the test suite, numbers not meaningful), `quick`
(the whole evaluation in under 10 minutes on a 2-core machine) and `full` (the scripts' default,
papers' sizes where feasible).  Experiments of kind "model" report modelled or counted
quantities (simulator, emulated tracker, crash simulator) and may run two at a time; kind "timed"
measures wall time and runs alone."""
import json
import os

from prosper.cmd_bench import TARGETS
from prosper.paths import PROSPER, ROOT, bench_program
from prosper.paths import python as py


class Experiment:
    """name: directory under RAW; argv(size, outdir) -> command; files: what it must leave in
    outdir; stdout_to: a file in outdir that receives the command's stdout (or None); module: a
    Python module the command needs (absent: the experiment is reported missing, not failed)."""

    def __init__(self, name, title, kind, argv, files, figures, stdout_to=None, module=None):
        self.name, self.title, self.kind = name, title, kind
        self.argv, self.files, self.figures, self.stdout_to = argv, files, figures, stdout_to
        self.module = module


def _bench_program(name):
    return bench_program(name)


# ---------------------------------------------------------------- figure readers
# Each reader takes the parsed source file and returns {figure id: (ours, paper, notes)} where
# ours = {"columns": [...], "rows": [[...], ...]} and paper is text or a table of the same shape.

def table(columns, rows, plot=None):
    """plot: the columns worth drawing together (same unit); default all numeric ones."""
    t = {"columns": list(columns), "rows": [list(r) for r in rows]}
    if plot:
        t["plot"] = list(plot)
    return t


def sim_figures(d):
    res = d["results"]
    paper = d.get("paper", {})
    fig3 = ["flush", "flush-sp", "undo", "undo-sp", "redo", "redo-sp"]
    fig8 = ["romulus", "ssp-10us", "ssp-100us", "ssp-1ms", "dirtybit", "prosper"]
    periods = ["ssp-10us", "ssp-100us", "ssp-1ms"]
    combos = ["ssp+ssp", "ssp+dirtybit", "ssp+prosper"]
    out = {
        "prosper-fig3": (table(["program"] + fig3, [[p] + [r["fig3"][m] for m in fig3] for p, r in res.items()]),
                         paper.get("fig3", ""), "execution time normalized to the same trace in DRAM (model)"),
        "prosper-fig8": (table(["program"] + fig8, [[p] + [r["fig8"][m] for m in fig8] for p, r in res.items()]),
                         paper.get("fig8", ""), "stack mechanism, heap in DRAM; time normalized to no persistence"),
        "prosper-fig8-artifact": (table(["program"] + fig8, [[p] + [r["fig8_artifact"][m] for m in fig8]
                                                             for p, r in res.items() if "fig8_artifact" in r]),
                                  paper.get("fig8", ""), "SSP and Romulus as the paper's artifact ran them, its placement "
                                                         "(stack and heap in NVM for SSP and Romulus, the heap in NVM for "
                                                         "Dirtybit and Prosper); time normalized to all in DRAM"),
        "prosper-fig9": (table(["program"] + [f"{c} @{p[4:]}" for p in periods for c in combos],
                               [[p] + [r["fig9"][per][c] for per in periods for c in combos] for p, r in res.items()]),
                         paper.get("fig9", ""), "heap+stack combinations per SSP consolidation period; "
                                                "time normalized to no persistence"),
        "prosper-fig9-artifact": (table(["program"] + [f"{c} @{p[4:]}" for p in periods for c in combos],
                                        [[p] + [r["fig9_artifact"][per][c] for per in periods for c in combos]
                                         for p, r in res.items() if "fig9_artifact" in r]),
                                  paper.get("fig9", ""), "the heap under SSP as the paper's artifact ran it "
                                                         "(ssp-gemos-*); time normalized to all in DRAM"),
        "prosper-fig12": (table(["program"] + [f"{g} B" for g in ("8", "16", "32", "64", "128")],
                                [[p] + [r["fig12"][g]["normalized"] for g in ("8", "16", "32", "64", "128")]
                                 for p, r in res.items() if "fig12" in r]),
                          paper.get("fig12", ""), "Prosper's tracker alone (prosper-track), time normalized to no "
                                                  "tracking, by tracking granularity (model)"),
        "ours-sim-speed": (table(["program", "events", "slowest mechanism events/s"],
                                 [[p, r["events"], r["slowest_events_per_second"]] for p, r in res.items()],
                                 plot=["slowest mechanism events/s"]),
                           "design target (docs/sim.md, Speed): >= 2e7 trace events per second per mechanism",
                           "the simulator's own speed, measured in this run on a shared machine"),
    }
    return out


def hw_figures(d):
    out = {}
    f2 = d["fig2"]["ours"]
    out["prosper-fig2"] = (table(["program", "fraction of stack stores beyond the final SP"], f2.items()),
                           d["fig2"]["paper"], "emulated tracker (Valgrind tool), 10 ms intervals")
    f4 = d["fig4"]["ours"]
    out["prosper-fig4"] = (
        table(["program", "checkpoints", "Dirtybit B/ckpt", "Prosper 8 B B/ckpt", "exact B/ckpt"],
              [[n, v["checkpoints"], v["dirtybit_bytes_per_ckpt"], v["prosper8_bytes_per_ckpt"], v["exact_bytes_per_ckpt"]]
               for n, v in f4.items()], plot=["Dirtybit B/ckpt", "Prosper 8 B B/ckpt", "exact B/ckpt"]),
        table(["program", "Dirtybit / Prosper reduction"], d["fig4"]["paper"].items()),
        "stack bytes per checkpoint; soundness mismatches: "
        + ", ".join(f"{n} {v['soundness_mismatches']}" for n, v in f4.items()))
    grans = ["8", "16", "32", "64", "128"]
    rows_a, rows_b, paper10 = [], [], []
    for name, v in d["fig10"].items():
        cfg = {str(c["gran"]): c for c in v["hw"]["configs"]}
        rows_a.append([name, v["hw"]["checkpoints"], v["hw"]["dirtybit_bytes_per_ckpt"], v["hw"]["exact_bytes_per_ckpt"]]
                      + [cfg[g]["bytes_per_ckpt"] for g in grans])
        rows_b.append([name] + [v["time"][g]["normalized"] for g in grans])
        if v.get("paper"):
            paper10.append([name, v["paper"]])
    out["prosper-fig10a"] = (table(["program", "checkpoints", "Dirtybit", "exact"] + [f"{g} B" for g in grans], rows_a,
                                   plot=["Dirtybit", "exact"] + [f"{g} B" for g in grans]),
                             table(["program", "paper"], paper10), "stack bytes per checkpoint by tracking granularity")
    out["prosper-fig10b"] = (table(["program"] + [f"{g} B" for g in grans], rows_b), table(["program", "paper"], paper10),
                             "checkpoint overhead Prosper / Dirtybit, simulated by prosper-sim on a trace of the run")
    rows11 = [[n] + [v[ms]["bytes_per_ckpt"] for ms in ("1", "5", "10")] for n, v in d["fig11"]["ours"].items()]
    out["prosper-fig11"] = (table(["program", "1 ms", "5 ms", "10 ms"], rows11), d["fig11"]["paper"],
                            "stack bytes per checkpoint (8 B granules) by interval")
    rows13 = []
    for n, v in d["fig13"]["ours"].items():
        rows13 += [[n, f"HWM {h} (LWM 4)", x["loads"], x["stores"]] for h, x in sorted(v["hwm"].items(), key=lambda i: int(i[0]))]
        rows13 += [[n, f"LWM {l} (HWM 24)", x["loads"], x["stores"]] for l, x in sorted(v["lwm"].items(), key=lambda i: int(i[0]))]
    out["prosper-fig13"] = (table(["program", "setting", "bitmap loads", "bitmap stores"], rows13), d["fig13"]["paper"],
                            "tracker bitmap traffic vs the high/low water marks")
    return out


CRPM_T1A = {"mprotect": [3190, 987, 117], "soft-dirty": [1303, 872, 846], "libcrpm-Default": [269, 56, 7]}
CRPM_T1B = {"undo-log": [218409, 173916, 40591], "LMC": [222702, 184574, 40584], "libcrpm-Default": [333, 281, 8]}


def crpm_figures(d):
    kv = d["kv"]

    def get(v, s, w, k):
        return next((r[k] for r in kv if r["variant"] == v and r["struct"] == s and r["workload"] == w), None)
    variants = sorted({r["variant"] for r in kv}, key=[r["variant"] for r in kv].index)
    out = {
        "crpm-fig7": (table(["structure", "variant", "insert", "A 50/50", "B 95/5", "C read"],
                            [[s, v] + [get(v, s, w, "mops") for w in ("insert", "A", "B", "C")]
                             for s in ("map", "umap") for v in variants]),
                      "libcrpm-Default costs 13.7% vs NVM-NP (balanced); unordered_map up to 7.23x / 7.08x faster than "
                      "mprotect / soft-dirty; up to 1.47x / 1.38x faster than undo-log / LMC; read-only as fast as NVM-NP",
                      f"million operations per second, {kv[0]['records'] if kv else '?'} records, 128 ms epochs"),
        "crpm-table1a": (table(["variant", "insert", "A", "B"],
                               [[v] + [get(v, "umap", w, "ckpt_bytes_per_op") for w in ("insert", "A", "B")]
                                for v in ("pages", "default", "default-wp", "buffered", "undo")]),
                         table(["system", "insert", "A", "B"], [[k] + v for k, v in CRPM_T1A.items()]),
                         "checkpoint bytes per operation, unordered_map"),
        "crpm-table1b": (table(["variant", "insert", "A", "B"],
                               [[v] + [get(v, "umap", w, "fences_per_epoch") for w in ("insert", "A", "B")]
                                for v in ("undo", "default", "default-wp", "buffered")]),
                         table(["system", "insert", "A", "B"], [[k] + v for k, v in CRPM_T1B.items()]),
                         "persist fences per epoch, unordered_map"),
    }
    st = d.get("stencil") or []
    if st:
        out["crpm-fig8"] = (table(["mode", "seconds", "checkpointed MiB per rank"],
                                  [[r["mode"], r["seconds"], r["ckpt_mib_per_rank"]] for r in st], plot=["seconds"]),
                            "8 ranks on Optane: libcrpm-Buffered 1.05x the time without checkpoints (LULESH 90^3), FTI 1.12x",
                            f"MPI 3-D Jacobi, {st[0]['ranks']} ranks, checkpoint every {st[0]['every']} iterations")
    return out


def asl_figures(d):
    rows = d["bench"]["results"]

    def fig(f):
        return [r for r in rows if r["figure"] == f]
    return {
        "pronto-fig7": (table(["container", "value B", "volatile us", "persistent us", "overhead x"],
                              [[r["container"], r["value_bytes"], r["volatile_us"], r["persistent_us"], r["overhead"]]
                               for r in fig("7")], plot=["volatile us", "persistent us"]),
                        "overhead largest for tiny operations (up to 28x, vector push_back of 256 B), smallest for heavy "
                        "ones (3.2x, map with 4 KiB values)", "average latency per insert"),
        "pronto-fig8": (table(["threads", "volatile Mops/s", "persistent Mops/s"],
                              [[r["threads"], r["volatile_mops"], r["persistent_mops"]] for r in fig("8")]),
                        "volatile and persistent scale alike from 1 to 8 threads (24 cores)", "concurrent hash map, 1 KiB"),
        "pronto-fig12": (table(["operation ns", "volatile us", "ASL us", "Pronto-Sync us", "entries written by logger"],
                               [[r["op_ns"], r["volatile_us"], r["asl_us"], r["sync_us"], r["entries_by_logger"]]
                                for r in fig("12")], plot=["volatile us", "ASL us", "Pronto-Sync us"]),
                         "sub-microsecond operations cannot hide logging; from a few microseconds on ASL hides all of it "
                         "except the commit and hand-off", "1 KiB entries, operation latency swept"),
        "pronto-fig13": (table(["heap MiB", "sync phase ms", "async phase ms"],
                               [[r["heap_mib"], r["sync_ms"], r["async_ms"]] for r in fig("13a")]),
                         "sync phase 22-34 ms from 2 MB to 16 GB; async phase linear in size", "snapshot phases"),
        "pronto-recovery": (table(["heap MiB", "recovery ms", "load ms", "replay ms"],
                                  [[r["heap_mib"], r["recovery_ms"], r["load_ms"], r["replay_ms"]] for r in fig("13a")]),
                            "recovery of 1 GB in under 400 ms, 32 GB in about 7 s", "snapshot load + log replay"),
    }


def overhead_figures(d):
    progs = d["programs"]
    return {
        "ours-overhead": (
            table(["program", "native s", "page slowdown", "diff slowdown", "full slowdown", "checkpoints", "stop ms"],
                  [[p["program"], p["native_s"], p["page"]["slowdown"], p["diff"]["slowdown"], p["full"]["slowdown"],
                    p["checkpoints"], p["mean_stop_ms"]] for p in progs if "page" in p],
                  plot=["page slowdown", "diff slowdown", "full slowdown"]),
            "targets: slowdown <= 3% (micro), <= 10% (PR/SSSP) at 10 ms",
            f"prosper run vs native, median of {d['reps']} run(s); load average {d['machine']['loadavg_1min_start']:.1f} "
            f"at the start, {d['machine']['loadavg_1min_end']:.1f} at the end (noise)"),
        "ours-stack-bytes": (
            table(["program", "stack page B/ckpt", "stack 8 B diff B/ckpt", "exact B/ckpt"],
                  [[p["program"], p["stack_page_bytes_per_ckpt"], p["stack_diff_bytes_per_ckpt"],
                    p["stack_exact_bytes_per_ckpt"]] for p in progs if "stack_exact_bytes_per_ckpt" in p]),
            f"target: stack bytes <= {TARGETS['stack_over_exact']:g}x the exact minimum", "one untimed run with exact stack statistics"),
        "ours-resume": (
            table(["program", "restored bytes", "resume s", "memory s", "restore GB/s"],
                  [[p["program"], p["restored_bytes"], p["resume_seconds"], p["restore_memory_seconds"], p["restore_gbps"]]
                   for p in progs if "restore_gbps" in p], plot=["restore GB/s"]),
            f"target: restore >= {TARGETS['restore_gbps']:g} GB/s", "SIGKILL at about half the native time, then prosper resume"),
    }


def crashtest_figures(d):
    return {"ours-crashtest": (
        table(["workload", "variant", "model", "states", "inconsistent", "crash points", "nested", "continued"],
              [[r["workload"], r["variant"], r["granularity"], r["states"], r["inconsistent"], r["crash_points"],
                r["nested_states"], r["continued_states"]] for r in d["runs"]]),
        "(ours) every crash state recovers to a committed epoch; every protocol mutant is caught",
        f"mutants caught: {d['mutants_caught']} of {d['mutants']}")}


def torture_figures(d):
    return {"ours-torture": (
        table(["kills", "resumes", "identical", "checkpoints", "kills in commit window", "fresh starts"],
              [[d["kills"], d["resumes"], d["identical"], d["checkpoints"], d["kills_in_commit_window"], d["fresh_starts"]]]),
        "(ours) the output after every kill and resume equals the native run's",
        "prosper torture on a bench program (`identical` is 1 when the final output matched)")}


def dict_rows(rows):
    """A list of row objects as a table; columns in order of first appearance."""
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    return table(cols, [[r.get(c) for c in cols] for r in rows])


# The columns of each Kindle figure drawn together (one unit: the figure's y axis in FIGURES).
KINDLE_PLOT = {
    "kindle-fig4": ["persistent ms", "rebuild ms", "volatile ms"],
    "kindle-table3": ["persistent ms", "rebuild ms", "volatile ms"],
    "kindle-table4": ["persistent ms", "rebuild ms", "volatile ms"],
    "kindle-fig5": ["1 ms", "5 ms", "10 ms"],
    "kindle-fig6": ["Th-5", "Th-25", "Th-50"],
    "kindle-table5": ["Th-5 migrated", "Th-25 migrated", "Th-50 migrated"],
    "kindle-table6": ["page selection %", "page copy %"],
}


def kindle_figures(d):
    """The Kindle studies already write the report's shape: figures {id: {title, ours, paper, notes}}."""
    out = {}
    for fid, f in d["figures"].items():
        paper = f["paper"]
        if isinstance(paper, list) and paper and isinstance(paper[0], dict):
            paper = dict_rows(paper)
        elif not isinstance(paper, str):
            paper = json.dumps(paper)
        ours = dict_rows(f["ours"])
        drawn = [c for c in KINDLE_PLOT.get(fid, []) if c in ours["columns"]]
        if drawn:
            ours["plot"] = drawn
        out[fid] = (ours, paper, f.get("notes", ""))
    return out


# ---------------------------------------------------------------- the experiments

def _sized(size, tiny, quick, full):
    return {"tiny": tiny, "quick": quick, "full": full}[size]


EXPERIMENTS = [
    Experiment("hw", "Prosper tracker on the emulated hardware (Valgrind tool)", "model",
               lambda size, out: [py(), "-m", "prosper.hw_experiments", "--out", out]
               + _sized(size, ["--quick", "--only", "Rec-4,Quicksort,Gapbs_pr"], ["--quick"], []),
               ["hw_experiments.json"], {"hw_experiments.json": hw_figures}),
    Experiment("sim", "Prosper-sim: stack/heap persistence mechanisms", "model",
               lambda size, out: [py(), "-m", "prosper.sim_studies", "--out", out]
               + _sized(size, ["--quick", "--only", "Rec-4,Gapbs_pr"], ["--quick"], []),
               ["sim_studies.json"], {"sim_studies.json": sim_figures}),
    Experiment("kindle-pagetable", "Kindle: page-table persistence", "model",
               lambda size, out: [PROSPER, "sim", "--study", "pagetable", "--out", out]
               + _sized(size, ["--quick"], ["--quick"], []),
               ["kindle_pagetable.json"], {"kindle_pagetable.json": kindle_figures}, module="prosper.study_pagetable"),
    Experiment("kindle-ssp-interval", "Kindle: SSP consistency intervals", "model",
               lambda size, out: [PROSPER, "sim", "--study", "ssp-interval", "--out", out]
               + _sized(size, ["--quick"], ["--quick"], []),
               ["kindle_ssp-interval.json"], {"kindle_ssp-interval.json": kindle_figures}, module="prosper.study_ssp_interval"),
    Experiment("kindle-hscc", "Kindle: HSCC page migration", "model",
               lambda size, out: [PROSPER, "sim", "--study", "hscc", "--out", out]
               + _sized(size, ["--quick"], ["--quick"], []),
               ["kindle_hscc.json"], {"kindle_hscc.json": kindle_figures}, module="prosper.study_hscc"),
    Experiment("crashtest", "Pool protocol and libcrpm containers under simulated crashes and power failures", "model",
               lambda size, out: [PROSPER, "crashtest", "--json", "--states",
                                  _sized(size, "2000", "20000", "100000")],
               ["crashtest.json"], {"crashtest.json": crashtest_figures}, stdout_to="crashtest.json"),
    Experiment("overhead", "prosper run: overhead, stack bytes, resume", "timed",
               lambda size, out: [PROSPER, "bench", "overhead", "--json", "--md", os.path.join(out, "overhead.md")]
               + _sized(size, ["--quick", "--programs", "random"], ["--quick", "--programs", "random,quicksort,pr,kv"], []),
               ["overhead.json"], {"overhead.json": overhead_figures}, stdout_to="overhead.json"),
    Experiment("torture", "prosper run: kill -9 and resume, compared with a native run", "timed",
               lambda size, out: [PROSPER, "torture", "--json", "--kills", _sized(size, "3", "10", "50"),
                                  "--", _bench_program("recursive"), "4", _sized(size, "150", "400", "1000")],
               ["torture.json"], {"torture.json": torture_figures}, stdout_to="torture.json"),
    Experiment("crpm", "libcrpm: persistent maps and the MPI mini-app", "timed",
               lambda size, out: [os.path.join(ROOT, "bench", "scripts", "crpm_bench.sh"), "--out", out]
               + _sized(size, ["--records", "20000", "--ops", "40000", "--n", "16", "--iters", "10"],
                        ["--records", "200000", "--ops", "400000", "--n", "48", "--iters", "40"], []),
               ["crpm_bench.json"], {"crpm_bench.json": crpm_figures}),
    Experiment("asl", "asl (Pronto): asynchronous semantic logging", "timed",
               lambda size, out: [os.path.join(ROOT, "bench", "scripts", "asl_bench.sh"), "--out", out]
               + _sized(size, ["--quick", "--ops", "500"], ["--quick"], []),
               ["asl.json"], {"asl.json": asl_figures}),
]

# Which figure ids each experiment produces (so a missing figure names the experiment and why).
PRODUCES = {
    "hw": ["prosper-fig2", "prosper-fig4", "prosper-fig10a", "prosper-fig10b", "prosper-fig11", "prosper-fig13"],
    "sim": ["prosper-fig3", "prosper-fig8", "prosper-fig8-artifact", "prosper-fig9",
            "prosper-fig9-artifact", "prosper-fig12", "ours-sim-speed"],
    "kindle-pagetable": ["kindle-fig4", "kindle-table3", "kindle-table4"],
    "kindle-ssp-interval": ["kindle-fig5"],
    "kindle-hscc": ["kindle-fig6", "kindle-table5", "kindle-table6"],
    "crashtest": ["ours-crashtest"],
    "torture": ["ours-torture"],
    "overhead": ["ours-overhead", "ours-stack-bytes", "ours-resume"],
    "crpm": ["crpm-fig7", "crpm-table1a", "crpm-table1b", "crpm-fig8"],
    "asl": ["pronto-fig7", "pronto-fig8", "pronto-fig12", "pronto-fig13", "pronto-recovery"],
}

# Every figure the report covers, in report order: (id, paper, title, what its plot's y axis shows,
# with the unit).  A figure that no experiment of this run produced is reported as missing with
# the reason.
FIGURES = [
    ("prosper-fig2", "Prosper (HPCA 2024)", "Fig 2: stack stores beyond the interval's final SP",
     "fraction of stack stores (0-1)"),
    ("prosper-fig3", "Prosper (HPCA 2024)", "Fig 3: flush / undo / redo with and without SP-awareness",
     "execution time / DRAM (x, model)"),
    ("prosper-fig4", "Prosper (HPCA 2024)", "Fig 4: stack bytes per checkpoint, page vs 8 B",
     "stack bytes per checkpoint (B)"),
    ("prosper-fig8", "Prosper (HPCA 2024)", "Fig 8: stack persistence mechanisms",
     "execution time / no persistence (x, model)"),
    ("prosper-fig8-artifact", "Prosper (HPCA 2024)", "Fig 8 as the paper's artifact ran SSP and Romulus",
     "execution time / no persistence (x, model)"),
    ("prosper-fig9", "Prosper (HPCA 2024)", "Fig 9: heap + stack combinations",
     "execution time / no persistence (x, model)"),
    ("prosper-fig9-artifact", "Prosper (HPCA 2024)", "Fig 9 as the paper's artifact ran SSP",
     "execution time / no persistence (x, model)"),
    ("prosper-fig10a", "Prosper (HPCA 2024)", "Fig 10a: checkpoint size by tracking granularity",
     "stack bytes per checkpoint (B)"),
    ("prosper-fig10b", "Prosper (HPCA 2024)", "Fig 10b: checkpoint time by tracking granularity",
     "checkpoint time, Prosper / Dirtybit (x)"),
    ("prosper-fig11", "Prosper (HPCA 2024)", "Fig 11: checkpoint size by interval",
     "stack bytes per checkpoint (B)"),
    ("prosper-fig12", "Prosper (HPCA 2024)", "Fig 12: tracking overhead",
     "execution time / no tracking (x, model)"),
    ("prosper-fig13", "Prosper (HPCA 2024)", "Fig 13: bitmap traffic vs HWM / LWM",
     "bitmap accesses (count)"),
    ("crpm-fig7", "libcrpm (DAC 2022)", "Fig 7: persistent map / unordered_map throughput",
     "throughput (million operations/s)"),
    ("crpm-table1a", "libcrpm (DAC 2022)", "Table 1a: checkpoint bytes per operation",
     "checkpoint bytes per operation (B)"),
    ("crpm-table1b", "libcrpm (DAC 2022)", "Table 1b: persist fences per epoch",
     "persist fences per epoch (count)"),
    ("crpm-fig8", "libcrpm (DAC 2022)", "Fig 8: MPI application with checkpoints",
     "wall time (s)"),
    ("pronto-fig7", "Pronto (ASPLOS 2020)", "Fig 7: latency, volatile vs persistent",
     "latency per insert (us)"),
    ("pronto-fig8", "Pronto (ASPLOS 2020)", "Fig 8: concurrent hash map scaling",
     "throughput (million operations/s)"),
    ("pronto-fig12", "Pronto (ASPLOS 2020)", "Fig 12: hiding logging behind operations",
     "latency per operation (us)"),
    ("pronto-fig13", "Pronto (ASPLOS 2020)", "Fig 13: snapshot phases vs heap size",
     "phase time (ms)"),
    ("pronto-recovery", "Pronto (ASPLOS 2020)", "Recovery time vs heap size",
     "time (ms)"),
    ("kindle-fig4", "Kindle", "Fig 4: page tables, sequential allocation",
     "simulated time (ms)"),
    ("kindle-table3", "Kindle", "Table III: persistent vs rebuild page tables",
     "simulated time (ms)"),
    ("kindle-table4", "Kindle", "Table IV: rebuild cost vs interval",
     "simulated time (ms)"),
    ("kindle-fig5", "Kindle", "Fig 5: SSP consistency intervals",
     "execution time / no persistence (x, model)"),
    ("kindle-fig6", "Kindle", "Fig 6: HSCC",
     "time with migration / without (x, model)"),
    ("kindle-table5", "Kindle", "Table V: HSCC pages migrated",
     "pages (count)"),
    ("kindle-table6", "Kindle", "Table VI: HSCC selection vs copy time",
     "share of the migration work (%)"),
    ("ours-overhead", "Prosper (this project)", "prosper run overhead per program",
     "slowdown vs native (fraction: 0.03 = 3%)"),
    ("ours-stack-bytes", "Prosper (this project)", "Stack bytes per checkpoint: page, 8 B diff, exact",
     "stack bytes per checkpoint (B)"),
    ("ours-resume", "Prosper (this project)", "Resume time and restore bandwidth",
     "restore bandwidth (GB/s)"),
    ("ours-crashtest", "Prosper (this project)", "Crash-test statistics of the pool protocol and libcrpm containers",
     "count"),
    ("ours-torture", "Prosper (this project)", "kill -9 / resume torture",
     "count"),
    ("ours-sim-speed", "Prosper (this project)", "Simulator speed",
     "trace events per second"),
]


def by_name():
    return {e.name: e for e in EXPERIMENTS}
