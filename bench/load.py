"""Run a command on a busy machine: N processes per core spin beside it, and stop when it ends.

    python bench/load.py [--per-core 4] -- mlprep selfcheck
    python bench/load.py --per-core 4 -- python -m pytest tests/test_runner.py

What a timing verdict must survive (issue 23): a correct solution, and every reference, still passes
with 4 busy processes per core running alongside. Exit status: the command's.

Each busy process starts a session of its own, as a neighbour does (another terminal, a build, a browser):
Linux's scheduler (with autogroup, the default on desktop kernels) shares the CPU between sessions first,
and mlprep's fork server runs in a session of its own, so busy processes in the command's session would
compete with the judge and barely touch the sandboxes.
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def spin() -> None:
    os.setsid()
    try:  # killed with this script even when it is killed outright (a session of its own gets no Ctrl-C)
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    x = 0
    while True:  # pure Python: it holds a core the whole time, as a busy neighbour does
        x = (x * 1103515245 + 12345) % 2**31


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-core", type=int, default=4, help="busy processes per core (default 4)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run under load (after --)")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.per_core * (os.cpu_count() or 1))]
    for process in busy:
        process.start()
    try:
        return subprocess.run(command).returncode
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.join()


if __name__ == "__main__":
    sys.exit(main())
