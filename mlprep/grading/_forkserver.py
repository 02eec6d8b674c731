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

Client: `fork_server()` returns the process-wide ForkServer, started on first use; `prestart(name,
path)` starts it early, loading that grader, so that its imports overlap with the judge's own.
Server: `python -m mlprep.grading._forkserver SOCKET_FD [GRADER_MODULE GRADER_PATH]`.
"""

from __future__ import annotations

import io
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from mlprep.grading import _isolation
from mlprep.grading._files import load_module

START_TIMEOUT_S = 120.0  # importing torch on a loaded machine is slow
MAX_CONTROL_BYTES = 1 << 20

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class ForkServerError(Exception):
    """mlprep's fork server could not start or stopped answering: mlprep's failure, not the learner's."""


def _prctl(option: int, value: int) -> bool:
    """Linux prctl; False where it is not available (the server still works, with less cleanup)."""
    try:
        return _isolation.libc.prctl(option, value, 0, 0, 0) == 0
    except AttributeError:
        return False


def _send_message(sock: socket.socket, obj: Any, fds: tuple[int, ...] = ()) -> None:
    data = json.dumps(obj).encode()
    socket.send_fds(sock, [struct.pack("<I", len(data)) + data], list(fds))


def _receive_message(sock: socket.socket, max_fds: int = 0) -> tuple[Any, list[int]]:
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
            [sys.executable, "-m", "mlprep.grading._forkserver", str(theirs.fileno()), *(preload or ())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._errors,  # a file, not a pipe nobody drains: read only if it fails to start
            pass_fds=(theirs.fileno(),),
            start_new_session=True,  # Ctrl-C in the terminal reaches the judge, which cleans up
            env=env,
        )
        theirs.close()
        self._ready = False

    def _wait_ready(self) -> None:
        if self._ready:
            return
        ready, _, _ = select.select([self._sock], [], [], START_TIMEOUT_S)
        message, _ = _receive_message(self._sock) if ready else ({}, [])
        if message.get("ready") is not True:
            self._process.kill()
            self._process.wait()
            self._errors.seek(0)
            error = self._errors.read().decode(errors="replace")[-3000:]
            raise ForkServerError(f"the grading worker did not start: {error or 'no answer'}")
        self._ready = True

    def spawn(self, config: dict[str, Any], fds: tuple[int, int, int, int], workdir: str) -> tuple[int, bool]:
        """Fork a sandbox serving `config` on fds (requests in, replies out, output, wait status):
        its pid (the process group to kill) and whether it runs in namespaces of its own."""
        with self._lock:
            try:
                self._wait_ready()
                _send_message(self._sock, {"op": "spawn", "config": config, "workdir": workdir}, fds)
                reply, _ = _receive_message(self._sock)
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


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _max_fd() -> int:
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 20 if limit == resource.RLIM_INFINITY else limit


def _unbuffered_text(fd: int) -> io.TextIOWrapper:
    return io.TextIOWrapper(open(fd, "wb", buffering=0, closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)


class _Server:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.status_fds: dict[int, int] = {}  # sandbox pid -> write end of its status pipe
        self.isolated = _isolation.available()

    def load_grader(self, name: str, path: str) -> None:
        try:
            load_module(name, path)
        except BaseException:
            pass  # the sandbox loads it again and reports the failure (mlprep's, not the learner's)

    def spawn(self, request: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            _send_message(self.sock, {"error": f"expected 4 file descriptors, got {len(fds)}"})
            return
        config = request["config"]
        self.load_grader(config["grader_module"], config["grader"])
        pid = os.fork()
        if pid == 0:
            self.become_sandbox(config, request["workdir"], *fds)
        try:
            os.setpgid(pid, pid)  # also done by the child: whichever runs first, the judge can kill the group
        except OSError:
            pass
        fd_in, fd_out, output, status = fds
        for fd in (fd_in, fd_out, output):
            os.close(fd)
        self.status_fds[pid] = status
        _send_message(self.sock, {"pid": pid, "isolated": self.isolated})

    def become_sandbox(self, config: dict[str, Any], workdir: str, fd_in: int, fd_out: int, output: int, status: int) -> None:
        """In the forked child: shed the server's state, then serve the judge. Never returns."""
        code = 70
        try:
            os.setpgid(0, 0)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the server gone means the judge is gone
            _prctl(PR_SET_CHILD_SUBREAPER, 1)  # what the learner's code forks stays below the sandbox (pid 1 when isolated)
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
                signal.signal(signum, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(output, 1)
            os.dup2(output, 2)
            # Close everything else the server holds: its socket, its wakeup pipe, other children's pipes.
            keep = sorted((fd_in, fd_out, status))
            for low, high in zip([2, *keep], [*keep, _max_fd()]):
                os.closerange(low + 1, high)
            if self.isolated:
                self.isolate(workdir, fd_in, fd_out, status)
            os.close(status)
            # Unbuffered text streams on the output pipe: prints made just before a crash still arrive.
            sys.stdout = _unbuffered_text(1)
            sys.stderr = _unbuffered_text(2)
            os.chdir(workdir)
            os.environ["TMPDIR"] = tempfile.tempdir = workdir  # the only place it may write
            from mlprep.grading import _sandbox

            _sandbox.serve(config, fd_in, fd_out)
            code = 0
        except BaseException:
            code = 70
        finally:
            os._exit(code)

    def isolate(self, workdir: str, fd_in: int, fd_out: int, status: int) -> None:
        """Turn this process into A (see _isolation), which returns only in B, the sandbox proper."""
        _isolation.enter_namespaces()
        sandbox = os.fork()
        if sandbox == 0:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            _isolation.seal(workdir)
            return
        os.close(fd_in)
        os.close(fd_out)
        _, wait_status = os.waitpid(sandbox, 0)
        os.write(status, struct.pack("<q", wait_status))  # the judge reads the first status only
        os._exit(0)

    def reap(self) -> None:
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            status_fd = self.status_fds.pop(pid, None)
            if status_fd is None:
                continue  # an orphan the server adopted and killed
            try:
                os.write(status_fd, struct.pack("<q", wait_status))
            except OSError:
                pass
            os.close(status_fd)
            self.kill_orphans()

    def kill_orphans(self) -> None:
        """Kill what finished sandboxes left running (re-parented to this subreaper)."""
        for pid in children_of(os.getpid()):
            if pid not in self.status_fds:
                _kill_group(pid)

    def shutdown(self) -> None:
        for pid in list(self.status_fds) + children_of(os.getpid()):
            _kill_group(pid)

    def serve(self) -> None:
        wakeup_r, wakeup_w = os.pipe()
        os.set_blocking(wakeup_w, False)
        signal.set_wakeup_fd(wakeup_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that SIGCHLD reaches the wakeup fd
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the judge decides when we stop
        _send_message(self.sock, {"ready": True})
        try:
            while True:
                try:
                    ready, _, _ = select.select([self.sock, wakeup_r], [], [])
                except InterruptedError:
                    continue
                if wakeup_r in ready:
                    os.read(wakeup_r, 4096)
                    self.reap()
                if self.sock in ready:
                    request, fds = _receive_message(self.sock, max_fds=4)
                    if not request:
                        return  # the judge has gone
                    if request.get("op") == "spawn":
                        self.spawn(request, fds)
        finally:
            self.shutdown()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting sandbox leaves no core file behind
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    import mlprep.grading  # noqa: F401  (the toolkit every grader imports, and numpy with it)
    import mlprep.grading._sandbox  # noqa: F401

    server = _Server(sock)
    if len(sys.argv) == 4:
        server.load_grader(sys.argv[2], sys.argv[3])
    server.serve()


if __name__ == "__main__":
    main()
