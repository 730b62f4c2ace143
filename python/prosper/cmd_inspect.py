"""prosper inspect POOL [--json] -- header, versions, epoch, granularity, regions, segment
states and checksum status of a pool.  Never modifies the pool, never runs recovery."""
from .paths import exec_tool

EXAMPLE = "prosper inspect --json /dev/shm/pi.prosper"  # shown by --help


def add_arguments(p):
    p.add_argument("pool", help="path of the pool file")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def main(args):
    exec_tool("src/cli/prosper-pool", ["inspect"] + (["--json"] if args.json else []) + [args.pool])
