"""prosper SUBCOMMAND -- dispatch.  Each subcommand lives in its own module with
`add_arguments(parser)` and `main(args) -> int` (or `direct(name, argv)`); the table of
subcommands is subcommands.tsv beside this file, shared with bin/prosper, which runs the C ones
itself.  Only the chosen subcommand's module is imported.
Exit codes everywhere: 0 ok, 1 failure, 2 usage error or refused input."""
import argparse
import importlib
import os
import sys

from prosper.paths import exec_tool

def _table():
    """The one dispatch table (subcommands.tsv): name -> (handler, one-line help), in help order."""
    rows = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "subcommands.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, handler, help_ = line.rstrip("\n").split("\t")
                rows[name] = (handler, help_)
    return rows


SUBCOMMANDS = _table()


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


def version():
    """The project's version: the VERSION file at its root (one place, read by the build too)."""
    from prosper.paths import ROOT
    try:
        with open(os.path.join(ROOT, "VERSION")) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-V", "--version"):
        print(f"prosper {version()}")
        return 0
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name = argv[0]
    if name not in SUBCOMMANDS:
        print(f"prosper: unknown subcommand '{name}'\n\n{_usage()}", file=sys.stderr)
        return 2
    handler, help_ = SUBCOMMANDS[name]
    kind, target = handler.split(":", 1)
    if kind == "c":   # reached only when cli.py is run without bin/prosper
        exec_tool(target, [name] + argv[1:])
    module = importlib.import_module(target)
    if hasattr(module, "direct"):
        return module.direct(name, argv[1:]) or 0
    example = getattr(module, "EXAMPLE", None)   # every subcommand shows one (tests/e2e/test_cli.py)
    parser = _Parser(prog=f"prosper {name}", description=(module.__doc__ or help_).strip(),
                     epilog=f"example:\n  {example}" if example else None,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    return module.main(args) or 0


if __name__ == "__main__":
    sys.exit(main())
