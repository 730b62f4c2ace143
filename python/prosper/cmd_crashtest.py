"""prosper crashtest -- crash the pool protocol at every persist point of deterministic
workloads (the pool's own, and libcrpm containers in each of their modes), under a cache-line power-failure model (lines kept, dropped or torn at 8 bytes) and a
page model (pages kept, dropped or torn at 512-byte sectors); crash again inside recovery;
continue after recovery; inject I/O errors; then run every mutant (a persist removed, a step
reordered) and require that each is caught.  Exit 0 only if no state was inconsistent and every
mutant was caught."""
from .paths import exec_tool

EXAMPLE = "prosper crashtest --workload pool --states 20000"  # shown by --help


def add_arguments(p):
    p.add_argument("--workload", choices=["pool", "crpm", "all"], default="all",
                   help="the pool's own workload, libcrpm's containers, or both (default all: half the states each)")
    p.add_argument("--states", type=int, default=100000, help="crash states to explore at least (default 100000)")
    p.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    p.add_argument("--granularity", choices=["cache_line", "page", "both"], default="both",
                   help="power-failure model (default both: 3/4 cache line, 1/4 page)")
    p.add_argument("--no-mutants", action="store_true", help="skip the mutation tests")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def main(args):
    if args.states <= 0:
        from .paths import die
        die("crashtest: --states must be positive")
    argv = ["crashtest", "--workload", args.workload, "--states", str(args.states), "--seed", str(args.seed),
            "--granularity", args.granularity]
    if args.no_mutants:
        argv.append("--no-mutants")
    if args.json:
        argv.append("--json")
    exec_tool("src/cli/prosper-pool", argv)
