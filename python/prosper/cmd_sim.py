"""prosper sim TRACE [--stack MECH[,MECH...]] [--heap MECH[,MECH...]] [--interval-ms 10] [--config FILE] [--json]

Simulate persistence mechanisms on a trace recorded by `prosper trace` (docs/trace-format.md)
with prosper-sim's timing model (docs/sim.md; constants in sim/config/timing.conf).  Every
requested combination of a stack mechanism and a heap mechanism runs in one pass over the trace,
beside the baseline (both regions in DRAM, no persistence), and is reported with its cycles,
time normalized to the baseline, NVM bytes written, flushes, fences, checkpoint bytes, bitmap
loads/stores and the simulator's own speed (events per second).

Mechanisms (`prosper sim --list`): none-dram, none-nvm, flush, undo, redo (and -sp variants,
SP-aware: stack only), romulus, ssp-10us, ssp-100us, ssp-1ms, dirtybit, prosper (stack only).
A malformed trace or config is refused with exit code 2 and a message naming the file and the
record (or line)."""
import os

from .paths import tool


def direct(name, argv):
    """Hand the arguments to prosper-sim unchanged: its parser, messages and exit codes are ours."""
    path = tool(os.path.join("sim", "prosper-sim"))
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv == ["--list"] or argv == []:
        os.execv(path, [path, "--list"] if argv else [path])
    os.execv(path, [path] + list(argv))
