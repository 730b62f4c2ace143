"""The one way to start a program under the Valgrind tool "prosper" (tool/, docs/hw-tool.md):
where the tool is, how Valgrind finds it, and the options every caller passes."""
import os

from .paths import BUILD, die

LIBDIR = os.path.join(BUILD, "tool", "lib")


def require_tool(who):
    """require_tool -- refuse (exit 2) when the tool is not built."""
    if not os.access(os.path.join(LIBDIR, "prosper-amd64-linux"), os.X_OK):
        die(f"{who}: the Valgrind tool is not built (run `make build`)")


def command(program, args, log, tool_options, trace_children=False):
    """command -- (argv, env) that run PROGRAM ARGS under the tool with TOOL_OPTIONS
    (["--gran=8", ...]); Valgrind's own messages go to LOG (may contain %p, the pid)."""
    argv = ["valgrind", "--tool=prosper", f"--trace-children={'yes' if trace_children else 'no'}",
            f"--log-file={log}", *tool_options, program, *args]
    return argv, dict(os.environ, VALGRIND_LIB=LIBDIR)
