"""The fork server: one process that imports numpy, torch and the grader once and forks a fresh sandbox per request.

Starting a Python process that imports torch costs 1-2 s; forking one that already has costs a few
milliseconds. The server is a clean process (it never runs learner code, never runs a torch op, starts
no threads of its own), so forking it is safe; each child is a sandbox as isolated as a freshly started
one: its own process group, its own memory cap, its own pipes, killed whole on a timeout.

    judge (ForkServer)  --spawn {config} + 4 fds over a Unix socket-->  server  --fork-->  sandbox child
    judge  <--pid--  server;  later server --wait status--> the child's status pipe --> judge

The server also:
- loads each exercise's grader module (and with it numpy, torch) once, before forking, so every
  child starts with it; the grader named at start-up is loaded at once, while the judge loads its own;
- is a child subreaper: whatever the learner's code leaves behind (a setsid'd grandchild, a double
  fork) is re-parented to the server when the sandbox ends, and the server kills it;
- reaps its children and writes each one's wait status into that child's status pipe, which is how
  the judge (not the parent) learns "crashed with SIGSEGV" or "exited with code 3";
- exits, killing every child, when the judge goes away (its end of the socket closes).
Sandboxes see the judge's environment variables as they were when the server started.

This module is the client, in the judge: `fork_server()` returns the process-wide ForkServer, started
on first use; `prestart(name, path)` starts it early, loading that grader, so that its imports overlap
with the judge's own. The server is mlprep.grading._server (`python -m mlprep.grading._server
SOCKET_FD [GRADER_MODULE GRADER_PATH]`); the process helpers both use are here.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import mlprep.grading._isolation as _isolation

START_TIMEOUT_S = 120.0  # importing torch on a loaded machine is slow
MAX_CONTROL_BYTES = 1 << 20

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class ForkServerError(Exception):
    """mlprep's fork server could not start or stopped answering: mlprep's failure, not the learner's."""


def prctl(option: int, value: int) -> bool:
    """Linux prctl; False where it is not available (the server still works, with less cleanup)."""
    try:
        return _isolation.libc.prctl(option, value, 0, 0, 0) == 0
    except AttributeError:
        return False


def send_message(sock: socket.socket, obj: Any, fds: tuple[int, ...] = ()) -> None:
    data = json.dumps(obj).encode()
    socket.send_fds(sock, [struct.pack("<I", len(data)) + data], list(fds))


def receive_message(sock: socket.socket, max_fds: int = 0) -> tuple[Any, list[int]]:
    """One message; ({}, []) when the other end has closed."""
    data, fds, _, _ = socket.recv_fds(sock, MAX_CONTROL_BYTES, max_fds)
    if not data:
        return {}, fds
    (size,) = struct.unpack("<I", data[:4])
    while len(data) < 4 + size:  # a large config may arrive in pieces; fds come with the first
        more = sock.recv(4 + size - len(data))
        if not more:
            return {}, fds
        data += more
    return json.loads(data[4 : 4 + size]), fds


# -- the client, in the judge ------------------------------------------------------------------------


class ForkServer:
    def __init__(self, preload: tuple[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._errors = tempfile.TemporaryFile()
        env = dict(os.environ)
        # The server must import this package even when it is not installed (a checkout, a test).
        package_parent = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # One BLAS / OpenMP thread per sandbox: timings compare like with like whatever else runs
        # (a 2-thread BLAS next to a busy core can run 5x slower), and parallel grading does not
        # oversubscribe the cores.
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "mlprep.grading._server", str(theirs.fileno()), *(preload or ())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._errors,  # a file, not a pipe nobody drains: read only if it fails to start
            pass_fds=(theirs.fileno(),),
            start_new_session=True,  # Ctrl-C in the terminal reaches the judge, which cleans up
            env=env,
        )
        theirs.close()
        self._ready = False
        self.isolated = False

    def _wait_ready(self) -> None:
        if self._ready:
            return
        ready, _, _ = select.select([self._sock], [], [], START_TIMEOUT_S)
        message, _ = receive_message(self._sock) if ready else ({}, [])
        if message.get("ready") is not True:
            self._process.kill()
            self._process.wait()
            self._errors.seek(0)
            error = self._errors.read().decode(errors="replace")[-3000:]
            raise ForkServerError(f"the grading worker did not start: {error or 'no answer'}")
        self._ready = True
        self.isolated = bool(message.get("isolated"))

    def sandboxes_isolated(self) -> bool:
        """Whether each sandbox runs in namespaces of its own (see _isolation): the bank out of its sight."""
        with self._lock:
            self._wait_ready()
        return self.isolated

    def spawn(self, config: dict[str, Any], fds: tuple[int, int, int, int], workdir: str) -> tuple[int, bool]:
        """Fork a sandbox serving `config` on fds (requests in, replies out, output, wait status):
        its pid (the process group to kill) and whether it runs in namespaces of its own."""
        with self._lock:
            try:
                self._wait_ready()
                send_message(self._sock, {"op": "spawn", "config": config, "workdir": workdir}, fds)
                reply, _ = receive_message(self._sock)
            except OSError as exc:
                raise ForkServerError(f"the grading worker stopped answering: {exc}") from None
        if "pid" not in reply:
            raise ForkServerError(f"the grading worker could not start a sandbox: {reply.get('error', 'it exited')}")
        return reply["pid"], reply["isolated"]


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server(preload: tuple[str, str] | None = None) -> ForkServer:
    """The process-wide fork server; started on first use (loading the grader `preload`, a module
    name and a path, if given), replaced if it died."""
    global _server
    with _server_lock:
        if _server is None or _server._process.poll() is not None:
            _server = ForkServer(preload)
        return _server


def prestart(grader_module: str, grader_path: Path) -> None:
    """Start the server now with this grader, so that its imports run while the judge does its own."""
    fork_server((grader_module, str(grader_path)))


# -- the server --------------------------------------------------------------------------------------


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live (not zombie) process (Linux /proc; empty elsewhere)."""
    parents = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return parents
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            parents[int(entry)] = int(fields[1])
    return parents


def children_of(pid: int) -> list[int]:
    return [child for child, parent in _parents().items() if parent == pid]


def descendants_of(pid: int) -> list[int]:
    """Every live process below `pid`. A sandbox is a child subreaper, so what its code forks stays
    below it even when the intermediate parents exit or call setsid."""
    parents = _parents()
    found, frontier = [], {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found += sorted(frontier)
    return found
