"""The fork server's own process (see mlprep.grading._forkserver, its client in the judge): it imports numpy,
torch, the toolkit and each grader once, forks a sandbox per request, reaps the sandboxes and kills what
they leave behind.

    python -m mlprep.grading._server SOCKET_FD [GRADER_MODULE GRADER_PATH]
"""

from __future__ import annotations

import io
import os
import resource
import select
import signal
import socket
import struct
import sys
import tempfile
from typing import Any

import mlprep.grading._isolation as _isolation
from mlprep.grading._files import load_scenarios
from mlprep.grading._forkserver import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl, receive_message, send_message, children_of


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
        """The grader's scenarios (and with them numpy, torch), never its checks: every sandbox is forked from here."""
        try:
            load_scenarios(name, path)
        except BaseException:
            pass  # the sandbox loads it again and reports the failure (mlprep's, not the learner's)

    def spawn(self, request: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            send_message(self.sock, {"error": f"expected 4 file descriptors, got {len(fds)}"})
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
        send_message(self.sock, {"pid": pid, "isolated": self.isolated})

    def become_sandbox(self, config: dict[str, Any], workdir: str, fd_in: int, fd_out: int, output: int, status: int) -> None:
        """In the forked child: shed the server's state, then serve the judge. Never returns."""
        code = 70
        try:
            os.setpgid(0, 0)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the server gone means the judge is gone
            prctl(PR_SET_CHILD_SUBREAPER, 1)  # what the learner's code forks stays below the sandbox (pid 1 when isolated)
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
            # Read while it can be: a file of the bank (the self-check grades the references) goes out of sight next.
            try:
                with open(config["submission"], "rb") as submission:
                    source: bytes | None = submission.read()
            except OSError:
                source = None  # the sandbox reports it, as it would any file that cannot be imported
            if self.isolated:
                self.isolate(workdir, tuple(config.get("hidden", ())), fd_in, fd_out, status)
            os.close(status)
            # Unbuffered text streams on the output pipe: prints made just before a crash still arrive.
            sys.stdout = _unbuffered_text(1)
            sys.stderr = _unbuffered_text(2)
            os.chdir(workdir)
            os.environ["TMPDIR"] = tempfile.tempdir = workdir  # the only place it may write
            import mlprep.grading._sandbox as _sandbox

            _sandbox.serve(config, fd_in, fd_out, source)
            code = 0
        except BaseException:
            code = 70
        finally:
            os._exit(code)

    def isolate(self, workdir: str, hidden: tuple[str, ...], fd_in: int, fd_out: int, status: int) -> None:
        """Turn this process into A (see _isolation), which returns only in B, the sandbox proper."""
        _isolation.enter_namespaces()
        sandbox = os.fork()
        if sandbox == 0:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            _isolation.seal(workdir, hidden)
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
        send_message(self.sock, {"ready": True, "isolated": self.isolated})
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
                    request, fds = receive_message(self.sock, max_fds=4)
                    if not request:
                        return  # the judge has gone
                    if request.get("op") == "spawn":
                        self.spawn(request, fds)
        finally:
            self.shutdown()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting sandbox leaves no core file behind
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    import mlprep.grading  # noqa: F401  (the toolkit every grader imports, and numpy with it)
    import mlprep.grading._sandbox  # noqa: F401

    server = _Server(sock)
    if len(sys.argv) == 4:
        server.load_grader(sys.argv[2], sys.argv[3])
    server.serve()


if __name__ == "__main__":
    main()
