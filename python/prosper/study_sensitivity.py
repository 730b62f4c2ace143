"""study_sensitivity -- which constant of the timing model moves which headline ratio, and how far.

    bin/prosper sim --study sensitivity [--quick] [--json] [--out DIR]

The agreement of prosper-sim with a paper's figure rests on constants (sim/config/timing.conf),
some from the papers' platforms, some measured here, some assumed.  This study scales each of
them by 1/2 and by 2, one at a time (the others at timing.conf's values), replays the same traces
and reports the figures' headline ratios at both ends beside their values at timing.conf's:

  Fig 8 (Prosper, stack persistence, heap in DRAM), over the programs of sim_studies:
    SSP-10us / Prosper   mean over the programs of the ratio of their normalized times, the way the
                         paper forms its factors (prosper_paper.py; the paper: 2.14x average)
    Dirtybit / Prosper   the same (the paper: 1.12x average, up to 1.28x)
    SSP-10us / SSP-1ms   on Gapbs_pr (the paper: 1.97x)
    Romulus highest      on how many programs Romulus costs most (the paper: on every one)
  Kindle Table V / Fig 6 (HSCC, the heap in NVM), on Ycsb_mem and Gapbs_pr:
    Th-5 / Th-25, Th-5 / Th-50   pages migrated (the paper, Ycsb_mem: ~13x, ~101x)
    Fig 6 at Th-25       time with migration / without (the paper: above 1)
  Kindle Fig 4 / Table III (page tables), on synthetic sequential and alloc/free patterns:
    rebuild / persistent  at 10 ms checkpoints (the paper: ~2.4x at 64 MB to ~74.2x at 512 MB;
                          ~60x for Table III)

A ratio that does not move when a constant is halved or doubled does not depend on it; one that
crosses the paper's value names the constant the agreement hangs on."""
import os
import time
from concurrent.futures import ThreadPoolExecutor

from . import prosper_paper, study_hscc, study_pagetable
from .kindle_study import WORKLOADS, figures_markdown, made, traced
from .paths import ROOT
from .sim_studies import PROGRAMS, sim

OUTPUT = "sim_sensitivity"  # bench/results/OUTPUT.{json,md}

FACTORS = (0.5, 2.0)
FIG8_MECHS = ["romulus", "ssp-10us", "ssp-1ms", "dirtybit", "prosper"]
# the constants Fig 8's mechanisms are charged with (docs/sim.md says which charges which)
FIG8_PARAMS = ["thread_wakeup_ns", "nvm_read_ns", "nvm_write_ns", "nvm_write_gbps", "dram_read_ns", "sfence_cycles",
               "clwb_cycles", "bitmap_word_cycles", "os_checkpoint_ns", "os_copy_ns_per_byte", "pte_scan_cycles",
               "tlb_invalidate_ns", "metadata_update_cycles", "ssp_tlb_entries", "l3_kib"]
# --quick: the micro-benchmarks at their full sizes (small traces), and Gapbs_pr at its quick size
# for SSP-10us / SSP-1ms
FIG8_QUICK = {"Random": "full", "Stream": "full", "Sparse": "full", "Rec-8": "full", "Normal": "full",
              "Poisson": "full", "Gapbs_pr": "quick"}
# Kindle's page-table study (study_pagetable): rebuild / persistent on Fig 4a's smallest and largest
# sizes with checkpoints and Table III's first chunk (quick: a quarter of each)
PAGETABLE_PARAMS = ["rebuild_list_visit_instructions", "rebuild_list_visit_memrefs", "l1_cycles", "pte_scan_cycles",
                    "nvm_write_ns", "sfence_cycles", "page_fault_ns"]
PAGETABLE_PATTERNS = {False: [("Fig 4a 64 MB", "seq:64M"), ("Fig 4a 512 MB", "seq:512M"),
                              ("Table III 64 MB", "allocfree:512M:64M")],
                      True: [("Fig 4a 32 MB", "seq:32M"), ("Fig 4a 128 MB", "seq:128M"),
                             ("Table III 16 MB", "allocfree:128M:16M")]}
PAPER_PAGETABLE = [{"metric": "rebuild / persistent, Fig 4a", "paper": "~2.4x (64 MB) to ~74.2x (512 MB)"},
                   {"metric": "rebuild / persistent, Table III", "paper": "60x, 60x, 57x (64, 128, 256 MB)"}]
HSCC_PARAMS = ["hscc_dram_pages", "hscc_migration_ms", "hscc_list_cycles", "nvm_read_ns", "l3_kib"]
HSCC_HEAPS = ["none-nvm", "hscc-5", "hscc-25", "hscc-50"]
HSCC_BENCHMARKS = ["Ycsb_mem", "Gapbs_pr"]  # at the hscc study's sizes (study_hscc.SIZES)
INTEGER = {"ssp_tlb_entries", "l3_kib", "hscc_dram_pages"}

PAPER_FIG8 = [{"metric": "SSP-10us / Prosper", "paper": "2.14x average, 3.64x max (Ycsb_mem): \"2.1x\", \"3.6x\""},
              {"metric": "Dirtybit / Prosper", "paper": "1.12x average, up to 1.28x (G500_sssp); below 1 on Random and Stream"},
              {"metric": "SSP-10us / SSP-1ms (Gapbs_pr)", "paper": "1.97x (\"~2x\")"},
              {"metric": "Romulus highest", "paper": "on every program"}]
PAPER_TABLE5 = [{"metric": "Th-5 / Th-25 pages migrated (Ycsb_mem)", "paper": "~13x"},
                {"metric": "Th-5 / Th-50 pages migrated (Ycsb_mem)", "paper": "~101x"},
                {"metric": "Fig 6 at Th-25", "paper": "above 1 for every application"}]


def defaults():
    """timing.conf's values, by key."""
    out = {}
    with open(os.path.join(ROOT, "sim", "config", "timing.conf")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                k, v = (x.strip() for x in line.split("=", 1))
                out[k] = float(v)
    return out


def scaled(value, factor, key):
    v = value * factor
    return max(1, int(round(v))) if key in INTEGER else v


def config(workdir, key, value):
    """A --config file overriding one key (None: timing.conf as it is)."""
    if key is None:
        return []
    path = os.path.join(workdir, f"sens-{key}-{value}.conf")
    with open(path, "w") as f:
        f.write(f"{key} = {value}\n")
    return ["--config", path]


def ratio(a, b, digits=2):
    """a / b rounded; None when b is 0 (a count that fell to nothing has no ratio)."""
    return round(a / b, digits) if b > 0 else None


def fig8_metrics(norms):
    """norms: {program: {mechanism: normalized time}} -> the Fig 8 headline ratios (of normalized times)."""
    f = prosper_paper.fig8_factors(norms)
    def avg(d):
        return round(prosper_paper.mean(list(d.values())), 2) if d else None
    pr = f["ssp10_over_ssp1ms"].get("Gapbs_pr")
    return {"SSP-10us / Prosper": avg(f["ssp10_over_prosper"]), "Dirtybit / Prosper": avg(f["dirtybit_over_prosper"]),
            "SSP-10us / SSP-1ms (Gapbs_pr)": round(pr, 2) if pr is not None else None,
            "Romulus highest": f"{sum(max(n, key=n.get) == 'romulus' for n in norms.values())}/{len(norms)}"}


def hscc_metrics(results):
    """results: {workload: {heap: result}} -> the Table V / Fig 6 headline numbers."""
    out = {}
    for w, by in results.items():
        m = {h: by[h]["pages_migrated"] for h in HSCC_HEAPS[1:]}
        out[f"Th-5 / Th-25 ({w})"] = ratio(m["hscc-5"], m["hscc-25"])
        out[f"Th-5 / Th-50 ({w})"] = ratio(m["hscc-5"], m["hscc-50"])
        out[f"Fig 6 at Th-25 ({w})"] = round(by["hscc-25"]["cycles"] / by["none-nvm"]["cycles"], 4)
    return out


def sweep(params, base, measure, workdir):
    """For each parameter: the metrics at timing.conf's value and at each factor; rows for a table
    (the first is timing.conf's).  The variants run side by side, one per core (each is a
    single-threaded `prosper sim`)."""
    for key in params:
        if key not in base:
            raise KeyError(f"sensitivity: {key} is not in timing.conf")
    variants = [(None, None)] + [(key, f) for key in params for f in FACTORS]
    extras = [config(workdir, k, scaled(base[k], f, k)) if k else [] for k, f in variants]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        got = list(pool.map(measure, extras))
    rows = [{"parameter": "(timing.conf)", "value": ""}]
    for k, v in got[0].items():  # both columns: where the others start from
        for factor in FACTORS:
            rows[0][f"{k} at x{factor:g}"] = v
    for (key, factor), metrics in zip(variants[1:], got[1:]):
        if rows[-1]["parameter"] != key:
            rows.append({"parameter": key, "value": f"{base[key]:g}"})
        for k, x in metrics.items():
            rows[-1][f"{k} at x{factor:g}"] = x
    return rows


def run(quick, workdir, fig8_programs=None, fig8_params=None, hscc_workloads=None, hscc_params=None,
        pagetable_params=None):
    t0 = time.time()
    base = defaults()
    names = fig8_programs or (list(FIG8_QUICK) if quick else [p[0] for p in PROGRAMS])
    traces = {}
    for name, prog, full, small in PROGRAMS:
        if name in names:
            size = FIG8_QUICK.get(name, "quick") if quick else "full"
            traces[name] = traced(workdir, name, prog + (small if size == "quick" else full))

    def fig8(extra):
        norms = {}
        for name, trace in traces.items():
            d = sim(trace, FIG8_MECHS, ["none-dram"], extra)
            norms[name] = {x["stack"]: x["normalized"] for x in d["results"] if x["heap"] == "none-dram"}
        return fig8_metrics(norms)

    hscc_traces = {w: traced(workdir, w, [WORKLOADS[w]] + study_hscc.SIZES[w][0 if quick else 1])
                   for w in (hscc_workloads or HSCC_BENCHMARKS)}

    def hscc(extra):
        res = {}
        for w, trace in hscc_traces.items():
            d = sim(trace, ["none-dram"], HSCC_HEAPS, extra)
            res[w] = {x["heap"]: x for x in d["results"] if x["stack"] == "none-dram"}
        return hscc_metrics(res)

    pt_traces = [(label, study_pagetable.synth(workdir, spec)) for label, spec in PAGETABLE_PATTERNS[bool(quick)]]

    def pagetable(extra):
        out = {}
        for label, trace in pt_traces:
            by, _ = study_pagetable.pagetable(trace, 10, extra, ["persistent", "rebuild"])
            out[f"rebuild / persistent ({label})"] = ratio(by["rebuild"]["ms"], by["persistent"]["ms"])
        return out

    fig8_rows = sweep(fig8_params or FIG8_PARAMS, base, fig8, workdir)
    hscc_rows = sweep(hscc_params or HSCC_PARAMS, base, hscc, workdir)
    pt_rows = sweep(PAGETABLE_PARAMS if pagetable_params is None else pagetable_params, base, pagetable, workdir)
    return {
        "study": "sensitivity",
        "made": made(quick, t0),
        "programs": {"fig8": list(traces), "hscc": list(hscc_traces)},
        "figures": {
            "fig8-sensitivity": {
                "title": "Prosper Fig 8's ratios with each constant halved and doubled",
                "ours": fig8_rows, "paper": PAPER_FIG8,
                "notes": ("each row scales one constant of sim/config/timing.conf (its value at timing.conf in "
                          "`value`); the first row is timing.conf's. Programs: " + ", ".join(traces) + ". Ratios are of "
                          "normalized times, averaged over the programs, as the paper forms its factors.")},
            "table5-sensitivity": {
                "title": "Kindle Table V and Fig 6 (HSCC) with each constant halved and doubled",
                "ours": hscc_rows, "paper": PAPER_TABLE5,
                "notes": ("pages migrated at fetch thresholds 5, 25, 50 and the time with migration at 25 over "
                          "the time without, per workload: " + ", ".join(hscc_traces) + ".")},
            "pagetable-sensitivity": {
                "title": "Kindle Fig 4 and Table III (page tables) with each constant halved and doubled",
                "ours": pt_rows, "paper": PAPER_PAGETABLE,
                "notes": ("rebuild (Kindle's list, as its artifact keeps it) over persistent, 10 ms checkpoints, on "
                          "the synthetic patterns " + ", ".join(f"{spec} ({label})" for label, spec in
                                                                PAGETABLE_PATTERNS[bool(quick)]) + ".")},
        },
    }


def markdown(result):
    return figures_markdown("prosper-sim sensitivity: what the agreement with the papers depends on", result)
