"""prosper sim TRACE [--stack MECH[,MECH...]] [--heap MECH[,MECH...]] [--interval-ms 10]
            [--profile paper|this-machine] [--config FILE] [--json]
prosper sim --study NAME [--quick] [--json] [--out DIR]
prosper sim --import-kindle KINDLE_IMAGE OUT_TRACE | --export-kindle TRACE OUT_KINDLE_IMAGE

Simulate persistence mechanisms on a trace recorded by `prosper trace` (docs/trace-format.md)
with prosper-sim's timing model (docs/sim.md; constants in sim/config/timing.conf, the papers'
platform; --profile this-machine takes the costs measured on this project's machine instead).  Every
requested combination of a stack mechanism and a heap mechanism runs in one pass over the trace,
beside the baseline (both regions in DRAM, no persistence), and is reported with its cycles,
time normalized to the baseline, NVM bytes written, flushes, fences, checkpoint bytes, bitmap
loads/stores and the simulator's own speed (events per second).

The mechanisms are those the simulator registers (listed below, from `prosper sim --list`).
A malformed trace or config is refused with exit code 2 and a message naming the file and the
record (or line).

--study NAME runs one of Kindle's studies on freshly recorded traces of our workloads and prints
its tables beside the paper's numbers (`pagetable`: Fig 4, Tables III/IV; `ssp-interval`: Fig 5;
`hscc`: Fig 6, Tables V/VI); --quick uses small inputs (about two minutes); the result is also
written to DIR/kindle_NAME.json and .md (default bench/results).  `sensitivity` scales each
constant of the timing model by 1/2 and 2 and shows how Prosper's Fig 8 and Kindle's Table V /
Fig 6 ratios move (DIR/sim_sensitivity.json and .md).  --import-kindle and
--export-kindle convert between our traces and Kindle's 28-byte tuple images (docs/sim.md)."""
import argparse
import importlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

from .paths import ROOT, die, tool

EXAMPLE = "prosper sim /tmp/t.trace --stack prosper,dirtybit,ssp-10us,romulus"  # shown by --help

# The studies are the modules prosper/study_NAME.py beside this file.
STUDIES = sorted(f[len("study_"):-len(".py")].replace("_", "-")
                 for f in os.listdir(os.path.dirname(os.path.abspath(__file__)))
                 if f.startswith("study_") and f.endswith(".py"))


def direct(name, argv):
    """Hand the arguments to prosper-sim unchanged: its parser, messages and exit codes are ours."""
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        listed = subprocess.run([tool(os.path.join("sim", "prosper-sim")), "--list"], capture_output=True, text=True)
        print("\nMechanisms:\n" + listed.stdout.rstrip())
        print("\nStudies: " + ", ".join(STUDIES))
        print(f"\nexample:\n  {EXAMPLE}")
        return 0
    if "--study" in argv or any(a.startswith("--study=") for a in argv):
        return study(argv)
    path = tool(os.path.join("sim", "prosper-sim"))
    if argv == ["--list"] or argv == []:
        os.execv(path, [path, "--list"] if argv else [path])
    os.execv(path, [path] + list(argv))


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        die(f"sim: {message} (usage: prosper sim --study NAME [--quick] [--json] [--out DIR])")


def study_module(name):
    """study_module -- prosper.study_NAME (dashes as underscores), or exit 2 saying it is missing."""
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        die(f"sim: --study {name!r}: not a study name (known: {', '.join(STUDIES)})")
    module = "prosper.study_" + name.replace("-", "_")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        known = [s for s in STUDIES if importlib.util.find_spec("prosper.study_" + s.replace("-", "_"))]
        die(f"sim: no study {name!r}: module {module} is missing (available: {', '.join(known) or 'none'})")


def study(argv, workdir=None):
    """study -- `prosper sim --study NAME`: run(quick, workdir), then print and keep the result.
    Traces are recorded in a temporary directory unless `workdir` (tests) already holds them."""
    p = _Parser(prog="prosper sim --study", add_help=False)
    p.add_argument("--study", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = p.parse_args(argv)
    mod = study_module(args.study)
    if not os.path.isdir(args.out):
        die(f"sim: --out {args.out}: no such directory")
    if workdir:
        result = mod.run(args.quick, workdir)
    else:
        with tempfile.TemporaryDirectory(prefix=f"prosper-study-{args.study}-") as work:
            result = mod.run(args.quick, work)
    result["command"] = "bin/prosper sim " + " ".join(shlex.quote(a) for a in argv)
    md = mod.markdown(result)
    base = os.path.join(args.out, getattr(mod, "OUTPUT", f"kindle_{args.study}"))
    with open(base + ".json", "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    with open(base + ".md", "w") as f:
        f.write(md)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print(md)
    print(f"prosper sim --study {args.study}: wrote {base}.json and {base}.md", file=sys.stderr)
    return 0
