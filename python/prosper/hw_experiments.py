"""hw_experiments -- the Prosper paper's tracker experiments, rerun on the emulated hardware.

    bench/scripts/hw_experiments.sh [--quick] [--out DIR]

Runs the Table III micro-benchmarks under `prosper hw` and writes, next to the paper's
numbers, bench/results/hw_experiments.{json,md}:
  Fig 10a  stack bytes per checkpoint, 8..128 B granules vs Dirtybit (10 ms = 30 M instructions)
  Fig 10b  checkpoint overhead, Prosper / Dirtybit, by granularity (prosper-sim on a trace)
  Fig 11   bytes per checkpoint at 1, 5 and 10 ms intervals (Quicksort, Recursive-4/8/16)
  Fig 13   bitmap loads and stores vs HWM (LWM 4) and vs LWM (HWM 24)
  Fig 2    fraction of stack stores below the final SP of their interval
Every number comes from this run; the paper's figures are quoted only where its text states a
number (its plots are not digitized).

Fig 10b's times are prosper-sim's, the one timing model (docs/sim.md): each micro-benchmark is
traced once at the Fig 10 size and replayed with Prosper at every granularity and with Dirtybit;
a mechanism's overhead is its simulated cycles minus the baseline's (stack in DRAM, no
persistence), so Prosper's includes its tracker's bitmap traffic.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from prosper.paths import BUILD, PROSPER, ROOT
from prosper.sim_studies import sim, trace_program
MS = 3_000_000  # instructions per millisecond at 3 GHz, IPC 1 (the paper's 10 ms = 30 M cycles)

# name, argv, full size, quick size.  Quick sizes give every program at least 6 checkpoints of
# 10 ms (30 M instructions) under the tool, so that no row of the quick report measures nothing.
MICRO = [
    ("Random", ["random"], "120", "30"),
    ("Stream", ["stream"], "6000", "1500"),
    ("Sparse", ["sparse"], "12000", "6000"),
    ("Quicksort", ["quicksort"], "20", "9"),
    ("Rec-4", ["recursive", "4"], "100", "30"),
    ("Rec-8", ["recursive", "8"], "50", "20"),
    ("Rec-16", ["recursive", "16"], "25", "9"),
    ("Normal", ["normal"], "120000", "60000"),
    ("Poisson", ["poisson"], "50000", "15000"),
]

# Figs 2 and 4: the applications of the paper's Fig 1 (our GAPBS/Graph500/YCSB-style programs)
APPS = [
    ("Gapbs_pr", ["pr"], ["16"], ["14"]),
    ("G500_sssp", ["sssp"], ["15"], ["14"]),
    ("Ycsb_mem", ["kv"], ["2000000", "200000"], ["600000", "150000"]),
]
PAPER_FIG4 = {"Gapbs_pr": "300x", "G500_sssp": "56x", "Ycsb_mem": "33x"}

PAPER_FIG10 = {
    "Sparse": "size ~200x smaller than Dirtybit at 8 B; time ~22x lower on average over granularities",
    "Stream": "sizes similar to Dirtybit; time ~1.5x higher at 8 B, lowest overhead at 128 B",
    "Random": "second-lowest size reduction; time ~1.2x higher at 8 B, ~1.8x lower at 128 B",
    "Normal": "better than Dirtybit at all granularities",
    "Poisson": "better than Dirtybit at all granularities",
    "Quicksort": "better than Dirtybit; largest time reduction at 128 B",
}
PAPER_FIG11 = ("Recursive: size grows with the interval (1 < 5 < 10 ms); Quicksort: size lower at 10 ms; "
               "Rec-4 time per byte 22 ns at 1 ms vs 11 ns at 10 ms")
PAPER_FIG13 = ("SSSP: loads/stores fall as HWM grows, LWM matters little; mcf: the reverse for HWM, "
               "and loads/stores fall as LWM grows (SPEC mcf is not among our programs)")
PAPER_FIG2 = "Ycsb_mem: more than 36% of stack writes lie beyond the final SP (similar for Gapbs_pr, G500_sssp)"


def hw(args, prog, size, extra=()):
    sizes = size if isinstance(size, list) else [size]
    cmd = [PROSPER, "hw", "--json", *extra, "--", os.path.join(BUILD, "bench", prog[0]), *prog[1:], *sizes]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"hw_experiments: {' '.join(cmd)} failed: {r.stderr[-500:]}")
    return json.loads(r.stdout)


def sim_times(name, argv, tmp):
    """Fig 10b: prosper-sim's checkpoint overhead of Prosper at each granularity over Dirtybit's,
    on one trace of the program."""
    trace, _ = trace_program(name, argv, tmp)
    out, dirtybit = {}, None
    for g in (8, 16, 32, 64, 128):
        conf = os.path.join(tmp, f"gran{g}.conf")
        with open(conf, "w") as f:
            f.write(f"prosper_log_gran = {g.bit_length() - 1}\n")
        r = sim(trace, ["prosper"] + ([] if dirtybit else ["dirtybit"]), ["none-dram"], ["--config", conf])
        cycles = {x["stack"]: x["cycles"] for x in r["results"]}
        if dirtybit is None:
            dirtybit = cycles["dirtybit"] - cycles["none-dram"]
        p = cycles["prosper"] - cycles["none-dram"]
        out[g] = {"prosper_cycles": p, "dirtybit_cycles": dirtybit, "normalized": p / dirtybit if dirtybit > 0 else None}
    os.remove(trace)
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="hw_experiments.sh", description="the tracker experiments (Figs 2, 4, 10, 11, 13)")
    ap.add_argument("--quick", action="store_true", help="small inputs (minutes)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"),
                    help="directory for hw_experiments.{json,md} (default bench/results)")
    ap.add_argument("--only", default="", help="comma-separated benchmark names (default: all)")
    args = ap.parse_args(argv)
    quick = args.quick
    if args.only:
        keep = set(args.only.split(","))
        unknown = keep - {m[0] for m in MICRO + APPS}
        if unknown:
            ap.error(f"--only: unknown benchmark(s) {', '.join(sorted(unknown))}")
        MICRO[:] = [m for m in MICRO if m[0] in keep]
        APPS[:] = [a for a in APPS if a[0] in keep]
    results = {"command": "bench/scripts/hw_experiments.sh" + (" --quick" if quick else "")
               + (f" --only {args.only}" if args.only else ""),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": quick}
    t0 = time.time()
    fig10 = {}
    for name, prog, full, small in MICRO:
        size = small if quick else full
        j = hw(None, prog, size, ["--interval-instr", str(10 * MS)])
        with tempfile.TemporaryDirectory(prefix="prosper-hw-") as tmp:
            times = sim_times(name, prog + [size], tmp)
        fig10[name] = {"hw": j, "time": times, "paper": PAPER_FIG10.get(name, "")}
        print(f"  fig10 {name}: {j['checkpoints']} checkpoints", file=sys.stderr)
    results["fig10"] = fig10
    fig11 = {}
    for name, prog, full, small in MICRO:
        if name not in ("Quicksort", "Rec-4", "Rec-8", "Rec-16"):
            continue
        fig11[name] = {}
        for ms in (1, 5, 10):
            j = fig10[name]["hw"] if ms == 10 else hw(None, prog, small if quick else full,
                                                        ["--gran", "8", "--interval-instr", str(ms * MS)])
            c8 = next(c for c in j["configs"] if c["gran"] == 8)
            fig11[name][ms] = {"bytes_per_ckpt": c8["bytes_per_ckpt"], "checkpoints": j["checkpoints"],
                               "zero_byte_share": None}
        print(f"  fig11 {name}", file=sys.stderr)
    results["fig11"] = {"ours": fig11, "paper": PAPER_FIG11}
    fig13 = {}
    for name, prog, full, small in MICRO:
        if name not in ("Random", "Quicksort", "Rec-16", "Normal"):
            continue
        hwm = hw(None, prog, small if quick else full,
                 ["--gran", "8", "--table", "16", "--hwm", "8,16,24,32", "--lwm", "4"])
        lwm = hw(None, prog, small if quick else full,
                 ["--gran", "8", "--table", "16", "--hwm", "24", "--lwm", "0,4,8,16"])
        fig13[name] = {
            "hwm": {c["hwm"]: {"loads": c["bitmap_loads"], "stores": c["bitmap_stores"]} for c in hwm["configs"]},
            "lwm": {c["lwm"]: {"loads": c["bitmap_loads"], "stores": c["bitmap_stores"]} for c in lwm["configs"]},
        }
        print(f"  fig13 {name}", file=sys.stderr)
    results["fig13"] = {"ours": fig13, "paper": PAPER_FIG13}
    apps = {}
    for name, prog, full, small in APPS:
        apps[name] = hw(None, prog, small if quick else full, ["--interval-instr", str(10 * MS)])
        print(f"  fig4 {name}: {apps[name]['checkpoints']} checkpoints", file=sys.stderr)
    results["fig4"] = {"ours": {n: {"dirtybit_bytes_per_ckpt": j["dirtybit_bytes_per_ckpt"],
                                    "prosper8_bytes_per_ckpt": next(c for c in j["configs"] if c["gran"] == 8)["bytes_per_ckpt"],
                                    "exact_bytes_per_ckpt": j["exact_bytes_per_ckpt"], "checkpoints": j["checkpoints"],
                                    "soundness_mismatches": sum(c["soundness_mismatches"] for c in j["configs"])}
                                for n, j in apps.items()}, "paper": PAPER_FIG4}
    # Fig 13 on SSSP too, one of the paper's two programs for it
    for name, prog, full, small in (a for a in APPS if a[0] == "G500_sssp"):
        hwm = hw(None, prog, small if quick else full, ["--gran", "8", "--table", "16", "--hwm", "8,16,24,32", "--lwm", "4"])
        lwm = hw(None, prog, small if quick else full, ["--gran", "8", "--table", "16", "--hwm", "24", "--lwm", "0,4,8,16"])
        results["fig13"]["ours"][name] = {
            "hwm": {c["hwm"]: {"loads": c["bitmap_loads"], "stores": c["bitmap_stores"]} for c in hwm["configs"]},
            "lwm": {c["lwm"]: {"loads": c["bitmap_loads"], "stores": c["bitmap_stores"]} for c in lwm["configs"]},
        }
    fig2 = {n: fig10[n]["hw"]["beyond_sp_fraction"] for n in fig10}
    fig2.update({n: j["beyond_sp_fraction"] for n, j in apps.items()})
    results["fig2"] = {"ours": fig2, "paper": PAPER_FIG2}
    results["seconds"] = time.time() - t0
    os.makedirs(args.out, exist_ok=True)
    # paths relative to the checkout, so the results do not name this machine's directories
    text = json.dumps(results, indent=1).replace(ROOT + os.sep, "")
    with open(os.path.join(args.out, "hw_experiments.json"), "w") as f:
        f.write(text)
    md = render(results)
    with open(os.path.join(args.out, "hw_experiments.md"), "w") as f:
        f.write(md)
    print(md)


def render(r):
    L = [f"# Prosper tracker experiments (emulated hardware)", "",
         f"Produced by `{r['command']}` on {r['date']}. Every number below was measured in that run.",
         "", "## Fig 10a: stack bytes per checkpoint (10 ms)", "",
         "| benchmark | ckpts | Dirtybit | exact | 8 B | 16 B | 32 B | 64 B | 128 B | Dirtybit / 8 B | mismatches | paper |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, v in r["fig10"].items():
        j = v["hw"]
        cfg = {c["gran"]: c for c in j["configs"]}
        ratio = j["dirtybit_bytes_per_ckpt"] / cfg[8]["bytes_per_ckpt"] if cfg[8]["bytes_per_ckpt"] else float("nan")
        mism = sum(c["soundness_mismatches"] for c in j["configs"])
        L.append(f"| {name} | {j['checkpoints']} | {j['dirtybit_bytes_per_ckpt']:.0f} | {j['exact_bytes_per_ckpt']:.0f} | "
                 + " | ".join(f"{cfg[g]['bytes_per_ckpt']:.0f}" for g in (8, 16, 32, 64, 128))
                 + f" | {ratio:.1f}x | {mism} | {v['paper']} |")
    L += ["", "## Fig 10b: checkpoint overhead in prosper-sim, Prosper / Dirtybit (lower is better)", "",
          "| benchmark | 8 B | 16 B | 32 B | 64 B | 128 B |", "|---|---|---|---|---|---|"]
    for name, v in r["fig10"].items():
        t = v["time"]
        L.append(f"| {name} | " + " | ".join(
            f"{t[g]['normalized']:.3f}" if t[g]["normalized"] is not None else "-" for g in (8, 16, 32, 64, 128)) + " |")
    L += ["", "## Fig 11: bytes per checkpoint (8 B) by interval", "", "| benchmark | 1 ms | 5 ms | 10 ms |",
          "|---|---|---|---|"]
    for name, v in r["fig11"]["ours"].items():
        L.append(f"| {name} | " + " | ".join(f"{v[ms]['bytes_per_ckpt']:.0f} ({v[ms]['checkpoints']} ckpts)"
                                              for ms in (1, 5, 10)) + " |")
    L += ["", f"Paper: {r['fig11']['paper']}", "", "## Fig 13: bitmap loads / stores (8 B)", "",
          "| benchmark | HWM 8 | HWM 16 | HWM 24 | HWM 32 | LWM 0 | LWM 4 | LWM 8 | LWM 16 |",
          "|---|---|---|---|---|---|---|---|---|"]
    for name, v in r["fig13"]["ours"].items():
        cells = [f"{v['hwm'][h]['loads']}/{v['hwm'][h]['stores']}" for h in sorted(v["hwm"])]
        cells += [f"{v['lwm'][l]['loads']}/{v['lwm'][l]['stores']}" for l in sorted(v["lwm"])]
        L.append(f"| {name} | " + " | ".join(cells) + " |")
    L += ["", f"Paper: {r['fig13']['paper']}", "", "## Fig 2: stack stores below the final SP of their interval", "",
          "| benchmark | fraction |", "|---|---|"]
    for name, f in r["fig2"]["ours"].items():
        L.append(f"| {name} | {100 * f:.1f}% |")
    L += ["", f"Paper: {r['fig2']['paper']}", "", "## Fig 4: stack bytes per checkpoint, page vs 8 B (10 ms)", "",
          "| program | ckpts | Dirtybit (4 KiB) | Prosper 8 B | exact | reduction | paper | mismatches |",
          "|---|---|---|---|---|---|---|---|"]
    for name, v in r["fig4"]["ours"].items():
        red = v["dirtybit_bytes_per_ckpt"] / v["prosper8_bytes_per_ckpt"] if v["prosper8_bytes_per_ckpt"] else float("nan")
        L.append(f"| {name} | {v['checkpoints']} | {v['dirtybit_bytes_per_ckpt']:.0f} | {v['prosper8_bytes_per_ckpt']:.0f} | "
                 f"{v['exact_bytes_per_ckpt']:.0f} | {red:.0f}x | {r['fig4']['paper'][name]} | {v['soundness_mismatches']} |")
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    main(sys.argv[1:])
