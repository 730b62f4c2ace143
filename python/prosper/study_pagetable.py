"""study_pagetable -- Kindle's page-table study (§III-A: Fig 4, Tables III and IV) on prosper-sim.

    bin/prosper sim --study pagetable [--quick] [--json] [--out DIR]

Two ways of keeping a process's page table across a crash (sim/mech/pt_*.cc, docs/sim.md):
`persistent` (table pages in NVM, every entry write flushed and fenced; resume only reloads the
root) and `rebuild` (tables in DRAM; at every timer checkpoint the present pages are walked and
the virtual->NVM page list in NVM brought up to date; resume rebuilds the tables from the list),
beside `volatile` (DRAM tables, nothing kept) as the cost without persistence.

The allocation patterns are SYNTHETIC traces (`prosper-sim --synth`, sim/trace/synth.h: one
access per page, no program ran), as Kindle's micro-benchmarks: Fig 4a sequential allocation of
16..512 MB, Fig 4b single pages 4 KB / 2 MB / 1 GB apart, Table III alloc/free of 64/128/256 MB
chunks of a 512 MB area, Table IV the same with repeated passes and 10 ms / 100 ms / 1 s
checkpoint intervals.  One real program goes through the same study: bench/micro/alloc (the
Table III pattern) recorded by `prosper trace`, whose MAP/UNMAP records come from the Valgrind
tool.  --quick divides the sizes by 4 (Fig 4a stops at 128 MB)."""
import json
import os
import subprocess
import time

from .kindle_study import figures_markdown, made, traced
from .paths import BUILD, ROOT

PROSPER = os.path.join(ROOT, "bin", "prosper")
SCHEMES = ["persistent", "rebuild", "volatile"]

PAPER_FIG4 = ("Fig 4 (bar charts, 10 ms checkpoints; the text gives ratios only). (a) Sequential allocation "
              "16..512 MB, every page accessed: rebuild takes longer than persistent at every size, from ~2.4x "
              "(64 MB) to ~74.2x (512 MB); rebuild's time grows ~44x from 64 MB to 512 MB because its v->NVM list "
              "grows with the mapped area. (b) A fixed number of 4 KB pages 4 KB / 2 MB / 1 GB apart: persistent "
              "slightly slower than rebuild at 1 GB and 2 MB (more page-table levels written), faster at 4 KB "
              "(few page-table changes).")
PAPER_TABLE3 = [{"alloc/free": "64MB", "persistent ms": 325, "rebuild ms": 19377},
                {"alloc/free": "128MB", "persistent ms": 389, "rebuild ms": 23438},
                {"alloc/free": "256MB", "persistent ms": 517, "rebuild ms": 29376}]
PAPER_TABLE4 = [{"alloc/free": size, "interval": iv, "persistent ms": p, "rebuild ms": r}
                for size, rows in (("64MB", ((445, 55270), (445, 10580), (444, 430))),
                                   ("128MB", ((534, 68078), (532, 13103), (532, 515))),
                                   ("256MB", ((710, 88193), (708, 15775), (708, 685))))
                for iv, (p, r) in zip(("10 ms", "100 ms", "1 s"), rows)]

WHY = ("Why magnitudes differ: Kindle measured gemOS on gem5, where rebuild's list maintenance adds ~19 s to a "
       "run that takes 0.3 s with persistent tables (Table III, 64 MB at 10 ms), so each of its checkpoints costs "
       "about an interval or more; the paper does not say how its list is laid out or updated. Our rebuild walks "
       "each present page through the caches (a few ns per page) and writes only the list entries that changed, "
       "so its checkpoints cost well under a millisecond and rebuild's times stay near volatile's. Our "
       "persistent scheme pays a "
       "clwb+sfence per entry write, and the sfence waits for the NVM write queue, which page clearing keeps full "
       "(machine.h: sfence waits until every write issued so far is durable). So at 10 ms our persistent is "
       "slower than our rebuild where Kindle's was ~60x faster; what carries over are the trends that follow "
       "from the schemes' structure: rebuild's checkpoint cost grows with the mapped pages and with the "
       "checkpoint rate, persistent's cost grows with page-table changes and does not depend on the interval, "
       "and with checkpoints rarer than the run rebuild costs only DRAM tables.")


def sizes(quick):
    """sizes -- the study's parameters, full (paper-like) or quick (a quarter)."""
    if quick:
        return {"seq_mb": [16, 32, 64, 128], "stride_pages": 1024, "stride_passes": 20, "total": "128M",
                "chunks": ["16M", "32M", "64M"], "passes": 2, "alloc": ["16", "4"]}
    return {"seq_mb": [16, 32, 64, 128, 256, 512], "stride_pages": 4096, "stride_passes": 20, "total": "512M",
            "chunks": ["64M", "128M", "256M"], "passes": 2, "alloc": ["64", "16"]}


def sim_binary():
    return os.path.join(BUILD, "sim", "prosper-sim")


def synth(workdir, spec):
    """synth -- the synthetic trace of SPEC in workdir (made once)."""
    path = os.path.join(workdir, spec.replace(":", "_") + ".trace")
    if not os.path.exists(path):
        r = subprocess.run([sim_binary(), "--synth", spec, path], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"study pagetable: prosper-sim --synth {spec}: {r.stderr.strip()}")
    return path


def pagetable(trace, interval_ms=10):
    """pagetable -- prosper-sim's page-table study of one trace: {scheme: result}, and the report."""
    r = subprocess.run([sim_binary(), trace, "--pagetable", ",".join(SCHEMES), "--interval-ms", str(interval_ms),
                        "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"study pagetable: prosper-sim {trace} --pagetable: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    return {x["scheme"]: x for x in d["results"]}, d


def row(pattern, by, extra=None):
    """row -- one measured pattern: each scheme's time, rebuild's checkpoints and resume, the work."""
    p, rb, v = by["persistent"], by["rebuild"], by["volatile"]
    out = dict(extra or {})
    out.update({"pattern": pattern, "persistent ms": round(p["ms"], 3), "rebuild ms": round(rb["ms"], 3),
                "volatile ms": round(v["ms"], 3), "rebuild/persistent": round(rb["ms"] / p["ms"], 3),
                "rebuild ckpts": rb["checkpoints"], "rebuild resume ms": round(rb["resume_ms"], 3),
                "list writes": rb["list_entry_writes"], "entry writes": sum(p["entry_writes"]),
                "table pages": sum(p["tables_allocated"]), "persistent flushes": p["flushes"],
                "tlb misses": p["tlb_misses"]})
    return out


def run(quick, workdir):
    t0 = time.time()
    z = sizes(quick)
    fig4 = [row(f"seq:{mb}M", pagetable(synth(workdir, f"seq:{mb}M"))[0], {"panel": "a: sequential", "size": f"{mb} MB"})
            for mb in z["seq_mb"]]
    for gap in ("4K", "2M", "1G"):
        spec = f"stride:{z['stride_pages']}:{gap}:{z['stride_passes']}"
        fig4.append(row(spec, pagetable(synth(workdir, spec))[0], {"panel": "b: stride", "size": gap}))
    table3 = [row(f"allocfree:{z['total']}:{c}", pagetable(synth(workdir, f"allocfree:{z['total']}:{c}"))[0],
                  {"alloc/free": c + "B", "source": "synthetic"}) for c in z["chunks"]]
    alloc_argv = ["alloc"] + z["alloc"]
    recorded, rep = pagetable(traced(workdir, "alloc", alloc_argv))
    table3.append(row(f"recorded: bench/{' '.join(alloc_argv)}", recorded,
                      {"alloc/free": z["alloc"][1] + "MB of " + z["alloc"][0] + "MB", "source": "prosper trace"}))
    table3[-1]["map/unmap records"] = rep["mappings"]
    table4 = []
    for c in z["chunks"]:
        spec = f"allocfree:{z['total']}:{c}:{z['passes']}"
        for ms, label in ((10, "10 ms"), (100, "100 ms"), (1000, "1 s")):
            table4.append(row(spec, pagetable(synth(workdir, spec), ms)[0], {"alloc/free": c + "B", "interval": label}))
    figures = {
        "kindle-fig4": {"title": "Execution time with 10 ms checkpoints: (a) sequential allocation, (b) stride",
                        "ours": fig4, "paper": PAPER_FIG4, "notes": notes_fig4(fig4)},
        "kindle-table3": {"title": f"Alloc/free of a chunk of a {z['total']}B area (10 ms checkpoints)",
                          "ours": table3, "paper": PAPER_TABLE3, "notes": notes_table3(table3)},
        "kindle-table4": {"title": f"Alloc/free with {z['passes']} passes over the area after each re-allocation, "
                                   "by checkpoint interval", "ours": table4, "paper": PAPER_TABLE4,
                          "notes": notes_table4(table4)},
    }
    return {"study": "pagetable", "command": "bin/prosper sim --study pagetable" + (" --quick" if quick else ""),
            "made": made(quick, t0), "figures": figures}


def growth(rows, key):
    return rows[-1][key] / rows[0][key] if rows and rows[0][key] > 0 else float("nan")


def overhead(r, scheme):
    """overhead -- a scheme's time over volatile's, in percent."""
    return 100 * (r[f"{scheme} ms"] / r["volatile ms"] - 1)


def notes_fig4(rows):
    seq = [r for r in rows if r["panel"].startswith("a")]
    st = [r for r in rows if r["panel"].startswith("b")]
    ov = [overhead(r, "rebuild") for r in seq]
    rising = all(b >= a for a, b in zip(ov, ov[1:]))
    s = (f"(a) Rebuild's overhead over volatile goes from {ov[0]:.2f}% ({seq[0]['size']}) to {ov[-1]:.2f}% "
         f"({seq[-1]['size']}), {'rising with every size' if rising else 'not monotonically'}: its checkpoints walk "
         f"more pages as the area grows, and a larger area runs through more checkpoints, as in Kindle. Its time "
         f"grows {growth(seq, 'rebuild ms'):.1f}x from {seq[0]['size']} to {seq[-1]['size']} (the area grows "
         f"{growth(seq, 'entry writes'):.0f}x; Kindle: ~44x from 64 to 512 MB). But rebuild/persistent is "
         f"{seq[0]['rebuild/persistent']}..{seq[-1]['rebuild/persistent']} here, where Kindle has 2.4x..74.2x: our "
         f"persistent pays a flushed and fenced NVM write per page-table change. (b) Persistent's cost rises with "
         f"the stride ({', '.join(str(r['persistent ms']) + ' ms' for r in st)} for 4K/2M/1G: "
         f"{', '.join(str(r['table pages']) + ' table pages' for r in st)} each zeroed and written back), as "
         f"Kindle explains; rebuild stays near volatile at every stride, so we find persistent slower at 4 KB too, "
         f"where Kindle found it faster. ")
    return s + WHY


def notes_table3(rows):
    syn = [r for r in rows if r["source"] == "synthetic"]
    rec = [r for r in rows if r["source"] != "synthetic"]
    s = (f"From the smallest to the largest chunk persistent grows {growth(syn, 'persistent ms'):.2f}x (Kindle "
         f"1.59x, 325 -> 517 ms) and rebuild {growth(syn, 'rebuild ms'):.2f}x (Kindle 1.52x): both rise with the "
         f"alloc/free size, persistent because more entries are written and flushed, rebuild because more list "
         f"entries change and more pages are faulted. Rebuild/persistent is "
         f"{', '.join(str(r['rebuild/persistent']) for r in syn)} (Kindle ~57-60x: 19377/325, 23438/389, 29376/517). ")
    if rec:
        r = rec[0]
        s += (f"The recorded run of the real program ({r['pattern']}) gives the same order: persistent "
              f"{r['persistent ms']} ms, rebuild {r['rebuild ms']} ms, volatile {r['volatile ms']} ms. ")
    return s + WHY


def notes_table4(rows):
    by_size = {}
    for r in rows:
        by_size.setdefault(r["alloc/free"], {})[r["interval"]] = r
    flat = all(len({x["persistent ms"] for x in d.values()}) == 1 for d in by_size.values())
    falling = all(d["10 ms"]["rebuild ms"] >= d["100 ms"]["rebuild ms"] >= d["1 s"]["rebuild ms"] for d in by_size.values())
    beats = all(d["1 s"]["rebuild ms"] < d["1 s"]["persistent ms"] for d in by_size.values())
    everywhere = all(x["rebuild ms"] < x["persistent ms"] for d in by_size.values() for x in d.values())
    drop = [d["10 ms"]["rebuild ms"] / d["100 ms"]["rebuild ms"] for d in by_size.values()]
    s = (f"Persistent's time is {'identical' if flat else 'not identical'} across intervals for every size (Kindle: "
         f"within 2 ms); rebuild's {'falls' if falling else 'does not always fall'} from 10 ms to 100 ms to 1 s "
         f"(10 ms / 100 ms = {', '.join(f'{x:.2f}x' for x in drop)}; Kindle ~5x) and "
         f"{'is below persistent at 1 s for every size' if beats else 'is not below persistent at 1 s everywhere'}"
         f" (Kindle: 430 vs 444, 515 vs 532, 685 vs 708 ms), where the run ends before the first checkpoint "
         f"({', '.join(str(d['1 s']['rebuild ckpts']) for d in by_size.values())} checkpoints) and rebuild pays only "
         f"for DRAM page tables: cheaper entry writes and walks than NVM ones. The crossing differs: "
         f"{'ours is below persistent at every interval' if everywhere else 'ours is above persistent at some interval'}"
         f", Kindle's only at 1 s. ")
    return s + WHY


def markdown(result):
    return figures_markdown("Kindle page-table study: persistent vs rebuild page tables (Fig 4, Tables III and IV)",
                            result) + "\nAll traces except the recorded `bench/alloc` run are synthetic " \
                                      "(`prosper-sim --synth`, sim/trace/synth.h).\n"
