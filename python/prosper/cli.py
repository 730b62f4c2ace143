"""prosper SUBCOMMAND -- dispatch.  Each subcommand lives in its own module with
`add_arguments(parser)` and `main(args) -> int`; register it in SUBCOMMANDS below.
Exit codes everywhere: 0 ok, 1 failure, 2 usage error or refused input."""
import argparse
import importlib
import sys

# name -> (module, one-line help).  Order is the order shown in --help.
SUBCOMMANDS = {
    "inspect": ("prosper.cmd_inspect", "show a pool: header, epoch, regions, segments, checksums"),
    "crashtest": ("prosper.cmd_crashtest", "crash-point, power-failure and mutation tests of the pool protocol"),
    "demo": ("prosper.cmd_demo", "a short story: checkpoint, crash, recover, verify"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"prosper: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser():
    p = _Parser(prog="prosper", description="Prosper: make a process's memory state survive crashes.")
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)
    for name, (module, help_) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(sp)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_module", None):
        parser.print_help(sys.stderr)
        return 2
    return importlib.import_module(args._module).main(args) or 0


if __name__ == "__main__":
    sys.exit(main())
