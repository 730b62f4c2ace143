"""kindle_study -- what the Kindle studies of `prosper sim --study` (study_ssp_interval.py,
study_hscc.py) share: Kindle's Table II benchmarks as our workloads, tracing them once per
work directory, the `made` stamp of a result, and markdown tables.

Kindle's Gapbs_pr, G500_sssp and Ycsb_mem are our bench/workloads pr, sssp and kv (the same
kernels: GAPBS PageRank, Graph500 SSSP, a YCSB-A key-value store), at our sizes."""
import os
import platform
import time

from .sim_studies import sim, trace_program  # noqa: F401  (re-exported for the studies)

# Kindle's name -> our program
WORKLOADS = {"Gapbs_pr": "pr", "G500_sssp": "sssp", "Ycsb_mem": "kv"}


def traced(workdir, name, argv):
    """traced -- the trace of bench program argv in workdir, recorded on first use."""
    key = "-".join([name] + argv)
    path = os.path.join(workdir, key + ".trace")
    if not os.path.exists(path):
        trace_program(key, argv, workdir)
    return path


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.system()} {platform.release()} {platform.machine()}, {cpu}, {os.cpu_count()} cores"


def made(quick, t0):
    """made -- when, where and how long a study ran (contract of `prosper sim --study`)."""
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
            "loadavg": [round(x, 2) for x in os.getloadavg()], "quick": quick, "seconds": round(time.time() - t0, 1)}


def md_table(rows):
    """md_table -- a list of row dicts as a markdown table (columns in first-seen order)."""
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    return out


def figures_markdown(title, result):
    """figures_markdown -- every figure of a study result: ours, the paper's, the notes."""
    m = result["made"]
    L = [f"# {title}", "", f"Made by `{result['command']}` on {m['date']} ({m['machine']}; load average "
         f"{', '.join(str(x) for x in m['loadavg'])}; {m['seconds']} s{'; quick sizes' if m['quick'] else ''}).", ""]
    for fid, f in result["figures"].items():
        L += [f"## {fid}: {f['title']}", "", "Ours:", ""] + md_table(f["ours"]) + ["", "Paper:", ""]
        if isinstance(f["paper"], list):
            L += md_table(f["paper"])
        else:
            L.append(str(f["paper"]))
        L += ["", "Notes: " + f["notes"], ""]
    return "\n".join(L)


def sim_results(trace, heaps, extra=()):
    """sim_results -- `prosper sim` of the stack in DRAM and each heap mechanism: {heap: result}."""
    d = sim(trace, ["none-dram"], heaps, extra)
    return d, {r["heap"]: r for r in d["results"] if r["stack"] == "none-dram"}
