"""prosper SUBCOMMAND -- dispatch.  Each subcommand lives in its own module with
`add_arguments(parser)` and `main(args) -> int`; register it in SUBCOMMANDS below.
Only the chosen subcommand's module is imported.
Exit codes everywhere: 0 ok, 1 failure, 2 usage error or refused input."""
import argparse
import importlib
import sys

# name -> (module, one-line help).  Order is the order shown in --help.
SUBCOMMANDS = {
    "run": ("prosper.cmd_run", "run a program, checkpointing it every 10 ms into a pool (prosper run --help)"),
    "resume": ("prosper.cmd_run", "continue a killed or crashed program from its last checkpoint"),
    "torture": ("prosper.cmd_torture", "kill a program at random instants, resume it, compare with a native run"),
    "inspect": ("prosper.cmd_inspect", "show a pool: header, epoch, regions, segments, checksums"),
    "crashtest": ("prosper.cmd_crashtest", "crash-point, power-failure and mutation tests of the pool protocol"),
    "hw": ("prosper.cmd_hw", "run a program under the emulated Prosper tracker; stack checkpoint sizes vs Dirtybit"),
    "trace": ("prosper.cmd_trace", "record a program's loads and stores as a trace for `prosper sim`"),
    "sim": ("prosper.cmd_sim", "simulate persistence mechanisms (Prosper, SSP, Romulus, Dirtybit, ...) on a trace"),
    "bench": ("prosper.cmd_bench", "benchmarks: `bench overhead` = slowdown vs native, stack bytes vs exact, restore GB/s"),
    "eval": ("prosper.cmd_eval", "rerun the papers' experiments; a report with our numbers beside theirs"),
    "demo": ("prosper.cmd_demo", "a short story: a computation killed with SIGKILL, recovered, verified"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"prosper: {message}", file=sys.stderr)
        sys.exit(2)


def _usage():
    lines = ["usage: prosper SUBCOMMAND [OPTIONS]", "",
             "Prosper: make a process's memory state survive crashes.", "", "subcommands:"]
    width = max(len(n) for n in SUBCOMMANDS)
    for name, (_, help_) in SUBCOMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {help_}")
    lines += ["", "`prosper SUBCOMMAND --help` explains each. Exit codes: 0 ok, 1 failure, 2 usage or refused input."]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name = argv[0]
    if name not in SUBCOMMANDS:
        print(f"prosper: unknown subcommand '{name}'\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, help_ = SUBCOMMANDS[name]
    module = importlib.import_module(module_name)
    if hasattr(module, "direct"):
        return module.direct(name, argv[1:]) or 0
    parser = _Parser(prog=f"prosper {name}", description=(module.__doc__ or help_).strip(),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    return module.main(args) or 0


if __name__ == "__main__":
    sys.exit(main())
