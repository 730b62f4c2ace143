"""Waiting for a killed process group to be gone, for the tools that SIGKILL supervised runs.

A zombie counts as gone: it holds no file, lock or memory any more, and the killed program's
zombie waits for a parent that is dead too (its reaping is not ours to wait for)."""
import os
import time


def live_members(pgid):
    """Processes of the group that are not zombies."""
    live = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(name))
    return live


def wait_group_gone(pgid, timeout):
    """True once no live process of the group is left, False after `timeout` seconds."""
    end = time.monotonic() + timeout
    while live_members(pgid):
        if time.monotonic() >= end:
            return False
        time.sleep(0.002)
    return True


def end_group(pgid, timeout=5.0):
    """Kill what is still alive of a group whose leader ended (a worker it left behind, which
    would otherwise run on, unowned); the number of processes it killed."""
    left = live_members(pgid)
    if left:
        try:
            os.killpg(pgid, 9)
        except ProcessLookupError:
            return 0
        wait_group_gone(pgid, timeout)
    return len(left)
