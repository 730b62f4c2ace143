"""prosper run / prosper resume -- handled by the supervisor itself (src/supervisor/main.c).

The process is replaced by build/src/supervisor/prosper-supervise, so `prosper run`'s pid is the
supervisor's: a signal sent to it reaches the supervisor, and the program dies with it."""
from prosper.paths import exec_tool

SUPERVISOR = "src/supervisor/prosper-supervise"


def direct(name, argv):
    """Arguments go to the supervisor untouched (the program's own options follow `--`)."""
    exec_tool(SUPERVISOR, [name] + list(argv))
