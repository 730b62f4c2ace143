"""prosper eval [--tiny|--quick|--full] [--out DIR] [--only NAME,...] [--jobs N]

Rerun the experiments behind the papers' figures (Prosper, libcrpm, Pronto, Kindle) and our own
measurements, and write a report that puts our numbers beside the papers' for every figure:

  DIR/report.html   self-contained page (plots as PNG files in DIR/plots/)
  DIR/report.md     the same tables as markdown
  DIR/results.json  {"figures": [{"id", "title", "status", "ours", "paper", "command", "source", ...}],
                     "experiments": [...], "machine": {...}}
  DIR/raw/NAME/     what each experiment wrote, and its log

Every number under `ours` was read from a file written in this run (raw/...); a figure whose
experiment failed or does not exist is listed with status "missing" and the reason.  An
experiment that wrote its results but exited non-zero (a benchmark run inside it failed) has
status "problem" and its figures stay, with the reason beside the experiment.  Model
experiments (simulator, emulated tracker, crash simulator) run --jobs at a time; timed ones
(supervisor overhead, torture, libcrpm, asl) run alone, so they compete with nothing of ours.

Sizes: --quick (default; under 10 minutes on a 2-core machine), --full (the papers' sizes where
feasible; about 15 minutes on a quiet 2-core machine), --tiny (seconds per experiment: for the
test suite, numbers not meaningful).
Experiments: hw, sim, kindle-pagetable, kindle-ssp-interval, kindle-hscc, crashtest, overhead,
torture, crpm, asl.  Exit 0 when the report is written and every experiment that exists ran
cleanly; 1 when one failed or had a problem; 2 on bad arguments or a missing build."""
import concurrent.futures
import datetime
import importlib.util
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time

from . import eval_experiments as ex
from . import eval_report
from . import eval_verdicts
from .paths import BUILD, die

EXAMPLE = "prosper eval --quick --out /tmp/eval"  # shown by --help

TIMEOUT = {"tiny": 600, "quick": 900, "full": 6 * 3600}


def add_arguments(p):
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="size", action="store_const", const="quick",
                   help="small inputs, the whole evaluation in under 10 minutes (default)")
    g.add_argument("--full", dest="size", action="store_const", const="full", help="the papers' sizes where feasible")
    g.add_argument("--tiny", dest="size", action="store_const", const="tiny",
                   help="seconds per experiment, for tests; the numbers mean nothing")
    p.set_defaults(size="quick")
    p.add_argument("--out", default="prosper-eval", help="output directory (default ./prosper-eval)")
    p.add_argument("--only", default="", help="comma-separated experiments to run (the others are reported missing)")
    p.add_argument("--jobs", type=int, default=2, help="model experiments run at a time (default 2)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object on stdout: the report's files, figures ok/missing, experiments "
                        "that failed, seconds (progress stays on stderr)")


def unavailable(e):
    """Why experiment e cannot run in this checkout, or None."""
    if e.module and importlib.util.find_spec(e.module) is None:
        return f"not built yet: no {e.module} module"
    return None


def machine():
    cpu = "?"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "machine": platform.machine(),
            "python": platform.python_version(), "loadavg": list(os.getloadavg())}


def progress(done, total, msg):
    width = 24
    fill = width * done // max(total, 1)
    print(f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {msg}", file=sys.stderr, flush=True)


def run_one(e, size, raw):
    """Run experiment e; returns its record for results.json."""
    out = os.path.join(raw, e.name)
    os.makedirs(out, exist_ok=True)
    argv = e.argv(size, out)
    rec = {"name": e.name, "title": e.title, "kind": e.kind, "command": " ".join(shlex_quote(a) for a in argv),
           "status": "ok", "reason": "", "seconds": 0.0, "outputs": []}
    t0 = time.time()
    log = open(os.path.join(out, "log.txt"), "w")
    stdout = open(os.path.join(out, e.stdout_to), "w") if e.stdout_to else log
    env = dict(os.environ, PROSPER_BUILD=BUILD)
    try:
        p = subprocess.run(argv, stdout=stdout, stderr=log, cwd=ex.ROOT, env=env, timeout=TIMEOUT[size])
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        log.close()
        if stdout is not log:
            stdout.close()
    rec["seconds"] = round(time.time() - t0, 1)
    missing = [f for f in e.files if not fresh(os.path.join(out, f), t0)]
    if rc is None:
        rec["status"], rec["reason"] = "failed", f"timed out after {TIMEOUT[size]} s"
    elif missing:
        rec["status"] = "failed"
        rec["reason"] = f"exit code {rc}, wrote no {', '.join(missing)}: {last_line(os.path.join(out, 'log.txt'))}"
    elif rc != 0:
        # results were written but the command reports a problem (e.g. a benchmark run that failed)
        rec["status"] = "problem"
        rec["reason"] = f"exit code {rc}: {last_line(os.path.join(out, 'log.txt'))}"
    rec["outputs"] = sorted(os.path.relpath(os.path.join(dp, f), os.path.dirname(raw))
                            for dp, _, fs in os.walk(out) for f in fs)
    return rec


def shlex_quote(a):
    return shlex.quote(a.replace(ex.ROOT + os.sep, "") if a.startswith(ex.ROOT + os.sep) else a)


def fresh(path, since):
    return os.path.isfile(path) and os.path.getsize(path) > 0 and os.path.getmtime(path) >= since - 1


def last_line(path):
    try:
        lines = [l.strip() for l in open(path, errors="replace") if l.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def collect_figures(records, raw):
    """Figures in report order, read from this run's files; missing ones with their reason."""
    found, why = {}, {}
    for rec in records:
        e = ex.by_name()[rec["name"]]
        if rec["status"] == "missing":
            why[e.name] = f"experiment {e.name}: {rec['reason']}"
            continue
        for fname, reader in e.figures.items():
            src = os.path.join(raw, e.name, fname)
            if rec["status"] not in ("ok", "problem"):
                why[e.name] = f"experiment {e.name} {rec['status']}: {rec['reason']}"
                continue
            try:
                with open(src) as f:
                    figs = reader(json.load(f))
            except (OSError, ValueError, KeyError, TypeError, IndexError, StopIteration) as err:
                why[e.name] = f"could not read {os.path.relpath(src, os.path.dirname(raw))}: {type(err).__name__}: {err}"
                continue
            for fid, (ours, paper, notes) in figs.items():
                if rec["status"] == "problem":  # the figure stays, with what went wrong beside it
                    notes = f"{notes} [experiment {e.name} reported a problem: {rec['reason']}]".lstrip()
                found[fid] = {"ours": ours, "paper": paper, "notes": notes, "command": rec["command"],
                              "source": os.path.relpath(src, os.path.dirname(raw)), "experiment": e.name}
    producers = {fid: name for name, fids in ex.PRODUCES.items() for fid in fids}
    figures = []
    known = set()
    for fid, paper_name, title, ylabel in ex.FIGURES:
        known.add(fid)
        f = {"id": fid, "paper_name": paper_name, "title": title, "ylabel": ylabel}
        if fid in found:
            f.update(status="ok", **found[fid])
            f["verdict"], f["verdict_reason"] = eval_verdicts.verdict(fid, f["ours"], f["paper"])
            f["thin_rows"] = eval_verdicts.thin_rows(f["ours"])
        else:
            exp = producers.get(fid)
            reason = why.get(exp) if exp else None
            if not reason:
                reason = (f"experiment {exp} did not produce it" if exp
                          else "no experiment produces this figure yet")
            f.update(status="missing", reason=reason, ours=None, paper=None, command=None, source=None)
        figures.append(f)
    for fid, v in found.items():
        if fid not in known:
            figures.append({"id": fid, "paper_name": v["experiment"], "title": fid, "ylabel": "value", "status": "ok",
                            "verdict": eval_verdicts.NOT_COMPARED, "verdict_reason": "a figure the report does not list",
                            "thin_rows": eval_verdicts.thin_rows(v["ours"]), **v})
    return figures


def prepare_out(path):
    """The output directory: new, empty, or a previous report (replaced); anything else is refused."""
    if os.path.exists(path):
        if not os.path.isdir(path):
            die(f"eval: {path} exists and is not a directory")
        entries = set(os.listdir(path))
        ours = {"report.html", "report.md", "results.json", "raw", "plots", "screenshot.png"}
        if entries and not (entries <= ours and "results.json" in entries):
            die(f"eval: {path} is not empty and holds no earlier report; choose another --out")
        for name in entries:
            full = os.path.join(path, name)
            shutil.rmtree(full) if os.path.isdir(full) else os.remove(full)
    os.makedirs(os.path.join(path, "raw"), exist_ok=True)


def main(args):
    if args.jobs < 1:
        die("eval: --jobs must be at least 1")
    names = [n for n in args.only.split(",") if n] if args.only else [e.name for e in ex.EXPERIMENTS]
    unknown = [n for n in names if n not in ex.by_name()]
    if unknown:
        die(f"eval: unknown experiment(s) {', '.join(unknown)} (known: {', '.join(e.name for e in ex.EXPERIMENTS)})")
    if not os.access(os.path.join(BUILD, "src", "supervisor", "prosper-supervise"), os.X_OK):
        die(f"eval: the project is not built in {BUILD} (run `make build`)")
    out = os.path.abspath(args.out)
    prepare_out(out)
    raw = os.path.join(out, "raw")
    started = time.time()
    m = machine()
    records = []
    skipped = []
    todo = []
    for e in ex.EXPERIMENTS:
        why = "not selected (--only)" if e.name not in names else unavailable(e)
        if why:
            skipped.append({"name": e.name, "title": e.title, "kind": e.kind, "command": None, "status": "missing",
                            "reason": why, "seconds": 0.0, "outputs": []})
        else:
            todo.append(e)
    total = len(todo)
    print(f"prosper eval --{args.size}: {total} experiments into {out}", file=sys.stderr)
    done = 0
    model = [e for e in todo if e.kind == "model"]
    timed = [e for e in todo if e.kind == "timed"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(run_one, e, args.size, raw): e for e in model}
        for fut in concurrent.futures.as_completed(futs):
            rec = fut.result()
            records.append(rec)
            done += 1
            progress(done, total, f"{rec['name']}: {rec['status']} in {rec['seconds']:.0f} s {rec['reason'][:120]}")
    for e in timed:
        rec = run_one(e, args.size, raw)
        records.append(rec)
        done += 1
        progress(done, total, f"{rec['name']}: {rec['status']} in {rec['seconds']:.0f} s {rec['reason'][:120]}")
    order = [e.name for e in ex.EXPERIMENTS]
    records = sorted(records + skipped, key=lambda r: order.index(r["name"]))
    figures = collect_figures(records, raw)
    m["loadavg_end"] = list(os.getloadavg())
    results = {
        "command": "prosper eval --" + args.size + (f" --only {args.only}" if args.only else "") + f" --out {args.out}",
        "size": args.size,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 1),
        "machine": m,
        "experiments": records,
        "figures": figures,
    }
    eval_report.write(out, results)
    ok = sum(f["status"] == "ok" for f in figures)
    failed = [r["name"] for r in records if r["status"] in ("failed", "problem")]
    print(f"report: {os.path.join(out, 'report.html')} -- {ok} of {len(figures)} figures, "
          f"{len(figures) - ok} missing; {results['seconds']:.0f} s"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    if args.json:
        print(json.dumps({
            "report_html": os.path.join(out, "report.html"), "report_md": os.path.join(out, "report.md"),
            "results_json": os.path.join(out, "results.json"), "figures": len(figures), "figures_ok": ok,
            "figures_missing": len(figures) - ok, "failed": failed, "seconds": results["seconds"],
        }))
    return 1 if failed else 0
