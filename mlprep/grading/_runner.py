"""The judge's handle on one sandbox process: start it, send requests, enforce time and output limits.

Every way the learner's process can misbehave ends up as one of three exceptions, which the engine
turns into a verdict for the check that was running: SubmissionRaised (their code raised),
SubmissionCrashed (the process died: segfault, os._exit, memory), SubmissionTimeout (no answer in
time; the whole process group is killed).

Sandboxes are forked by the fork server (_forkserver), which has numpy, torch and the grader loaded.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import mlprep.grading._wire as _wire
from mlprep.grading._forkserver import ForkServerError, children_of, descendants_of, fork_server

OUTPUT_KEEP_BYTES = 16 * 1024  # what we keep of the learner's prints, to show them
OUTPUT_FLOOD_BYTES = 1 * 2**20  # more than this in one check is a flood and fails the check
BOOT_TIMEOUT_S = 60.0  # mlprep's own start of a sandbox (forking, loading the grader if the server could not)
CPU_POLL_S = 0.01  # how often a run with a CPU-time limit has its process's CPU clock read


class SubmissionProblem(Exception):
    """The learner's code misbehaved; the message says how, for the learner."""

    def __init__(self, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}


class SubmissionRaised(SubmissionProblem):
    pass


class SubmissionCrashed(SubmissionProblem):
    pass


class SubmissionTimeout(SubmissionProblem):
    pass


class SandboxBroken(Exception):
    """mlprep's own part of the sandbox failed before the learner's file was imported."""


def describe_error(error: dict[str, Any], memory_mb: int = 0) -> str:
    kind = error.get("kind")
    if kind == "not_implemented":
        return f"not implemented yet: NotImplementedError: {error.get('message', '')}".rstrip(": ")
    if kind == "exit":
        return f"your code {error['message']}; return a value instead of exiting"
    if kind == "memory":
        allowed = f"the {memory_mb} MiB of memory this exercise allows (memory_mb)" if memory_mb > 0 else "the memory this machine has"
        text = f"your code ran out of memory ({error.get('type') or 'MemoryError'}): it tried to allocate more than {allowed}"
        return text + (f"\n{error['traceback']}" if error.get("traceback") else "")
    if kind == "floating_point":
        setting = ", ".join(f'{k}="{v}"' for k, v in error.get("errstate", {}).items())
        text = (f"NumPy raised a floating-point warning ({error.get('message')}); this check runs your code under"
                f" np.errstate({setting}), because the contract allows no such warning here")
        return text + (f"\n{error['traceback']}" if error.get("traceback") else "")
    if kind == "unencodable":
        return f"the value your code returned could not be read back ({error.get('type')}: {error.get('message')})"
    text = f"your code raised {error.get('type')}: {error.get('message')}"
    if error.get("traceback"):
        text += "\n" + error["traceback"]
    return text


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


@dataclass
class SandboxConfig:
    """What a sandbox process is started with: the submission, the grader, the interface and its limits."""
    submission: Path
    grader: Path
    grader_module: str
    functions: tuple[str, ...]
    memory_mb: int
    hidden: tuple[str, ...] = ()  # folders out of the sandbox's sight: the banks' references and graders, mlprep's data folder


class CpuReading(NamedTuple):
    """The CPU time of the process that runs the learner's code, read by the judge from outside it: `cpu_s` from
    its CPU clock (every thread's, ended ones too, to the nanosecond), `reaped_ticks` the CPU time of the child
    processes it has waited for (clock ticks, /proc/PID/stat), `has_children` whether it has any now (zombies too)."""
    cpu_s: float
    reaped_ticks: int
    has_children: bool


def cpu_seconds_between(before: CpuReading | None, after: CpuReading | None) -> float | None:
    """The CPU seconds a run took, or None where its clock does not account for all of its work: no reading, or a
    child process there before, after, or in between (work done in a child would escape the clock)."""
    if before is None or after is None or before.has_children or after.has_children or after.reaped_ticks != before.reaped_ticks:
        return None
    return after.cpu_s - before.cpu_s


class Sandbox:
    def __init__(self, config: SandboxConfig):
        self.config = config
        self.pid: int | None = None
        self.isolated = False  # in namespaces of its own (see _isolation)
        self.exit_status: int | None = None
        self.output_head = bytearray()
        self.output_total = 0
        self._output_lock = threading.Lock()
        self._workdir = tempfile.TemporaryDirectory(prefix="mlprep-sandbox-")
        self.missing: list[str] = []
        self._runner_pid: int | None = None  # the process that runs the learner's code, found on first use
        self._cpu_limit_s: float | None = None  # while a request runs under a CPU-time limit: its process's clock reading to stop at

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, import_limit_s: float) -> None:
        """Fork a sandbox and import the submission within `import_limit_s`; raises SubmissionProblem if that fails."""
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        output_r, output_w = os.pipe()
        status_r, status_w = os.pipe()
        config = {
            "submission": str(self.config.submission),
            "grader": str(self.config.grader),
            "grader_module": self.config.grader_module,
            "functions": list(self.config.functions),
            "memory_mb": self.config.memory_mb,
            "hidden": list(self.config.hidden),
        }
        theirs = (to_child_r, from_child_w, output_w, status_w)
        try:
            self.pid, self.isolated = fork_server().spawn(config, theirs, self._workdir.name)
        except ForkServerError as exc:
            for fd in (to_child_w, from_child_r, output_r, status_r):
                os.close(fd)
            raise SandboxBroken(str(exc)) from None
        finally:
            for fd in theirs:
                os.close(fd)
        self.exit_status = None
        self._runner_pid = None
        self._to_child, self._from_child, self._status = to_child_w, from_child_r, status_r
        threading.Thread(target=self._drain_output, args=(output_r,), daemon=True).start()
        self._limit_s = import_limit_s
        try:
            self._receive(BOOT_TIMEOUT_S, during="starting the sandbox")
        except SubmissionProblem as problem:
            raise SandboxBroken(f"the sandbox did not start: {problem.message}\n{self.output_text()[-3000:]}") from None
        reply = self._receive(self._limit_s, during="importing your file")
        if not reply["ok"]:
            error = reply["error"]
            if error.get("type") == "SyntaxError" or error.get("type") == "IndentationError":
                raise SubmissionRaised(f"your file does not parse: {error['type']}: {error['message']}\n{error.get('traceback', '')}".rstrip(), error)
            raise SubmissionRaised("importing your file failed: " + describe_error(error, self.config.memory_mb), error)
        self.missing = reply["missing"]

    def leftover_processes(self) -> list[int]:
        """Processes the learner's code started and left running (the sandbox adopts orphans).
        Isolated, self.pid is the process that waits for the sandbox, which is its only child."""
        if self.pid is None:
            return []
        if not self.isolated:
            return descendants_of(self.pid)
        return [pid for sandbox in children_of(self.pid) for pid in descendants_of(sandbox)]

    def cpu_reading(self) -> CpuReading | None:
        """The learner's process's CPU time now (see CpuReading), or None where Linux's /proc and CPU clocks cannot
        tell it. CPU time, unlike wall time, does not grow with the machine's load: on a busy machine a short run is
        scheduled at once and a long one waits its turn, so wall-time growths mislead both ways."""
        try:
            if self._runner_pid is None and self.pid is not None:
                if self.isolated:  # self.pid waits for B, its only child, which runs the learner's code
                    with open(f"/proc/{self.pid}/task/{self.pid}/children", "rb") as children:
                        self._runner_pid = int(children.read().split()[0])
                else:
                    self._runner_pid = self.pid
            pid = self._runner_pid
            if pid is None:
                return None
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            has_children = False
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", "rb") as children:
                    has_children = has_children or bool(children.read().strip())
            # The process's CPU clock: make_process_cpuclock(pid, CPUCLOCK_SCHED), what clock_getcpuclockid(3) gives.
            return CpuReading(time.clock_gettime((~pid << 3) | 2), int(fields[13]) + int(fields[14]), has_children)
        except (OSError, ValueError, IndexError, AttributeError):  # not Linux, or the process has gone
            return None

    def alive(self) -> bool:
        return self.pid is not None and self._wait_status(0) is None

    def _wait_status(self, timeout_s: float) -> int | None:
        """The sandbox's wait status (as from os.waitpid) once it has ended, else None; the fork
        server, its parent, writes it into the status pipe."""
        if self.exit_status is None:
            ready, _, _ = select.select([self._status], [], [], timeout_s)
            if ready:
                data = os.read(self._status, 8)
                # Nothing at all: the fork server itself went away; report a kill.
                self.exit_status = struct.unpack("<q", data)[0] if len(data) == 8 else signal.SIGKILL
        return self.exit_status

    def stop(self) -> None:
        if self.pid is None:
            return
        for kill in (os.killpg, os.kill):  # the group: the learner's own children go too
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._wait_status(5.0)
        for fd in (self._to_child, self._from_child, self._status):
            try:
                os.close(fd)
            except OSError:
                pass
        self.pid = None

    def close(self) -> None:
        self.stop()
        self._workdir.cleanup()

    # -- output ----------------------------------------------------------------------------------
    def _drain_output(self, fd: int) -> None:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                return
            with self._output_lock:
                self.output_total += len(chunk)
                room = OUTPUT_KEEP_BYTES - len(self.output_head)
                if room > 0:
                    self.output_head += chunk[:room]

    def output_text(self) -> str:
        with self._output_lock:
            text = self.output_head.decode("utf-8", errors="replace")
            if self.output_total > len(self.output_head):
                text += f"\n… ({self.output_total - len(self.output_head)} more bytes not shown)"
            return text

    # -- requests --------------------------------------------------------------------------------
    def request(self, message: dict[str, Any] | bytes, timeout_s: float, during: str, limit_s: float | None = None,
                cpu_limit: tuple[CpuReading, float] | None = None) -> Any:
        """Send one request (a message, or one already encoded); `timeout_s` is what is left of the
        check's budget `limit_s`. With `cpu_limit` = (a reading taken just before, seconds), the request is also
        stopped once the learner's process has used that much CPU time since the reading."""
        self._limit_s = limit_s if limit_s is not None else timeout_s
        deadline = time.monotonic() + timeout_s
        data = message if isinstance(message, bytes) else _wire.encode(message)
        self._cpu_limit_s = cpu_limit[0].cpu_s + cpu_limit[1] if cpu_limit is not None else None
        try:
            self._write(struct.pack("<Q", len(data)) + data, deadline, during)
            reply = self._receive(deadline - time.monotonic(), during)
        finally:
            self._cpu_limit_s = None
        if not reply["ok"]:
            raise SubmissionRaised(describe_error(reply["error"], self.config.memory_mb), reply["error"])
        return reply

    def _write(self, data: bytes, deadline: float, during: str) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            _, ready, _ = select.select([], [self._to_child], [], max(remaining, 0))
            if not ready:
                self._fail_timeout(during)
            try:
                view = view[os.write(self._to_child, view[: 1 << 16]) :]
            except BrokenPipeError:
                self._fail_dead(during)

    def _read_exact(self, n: int, deadline: float, during: str) -> bytes:
        chunks, remaining = [], n
        while remaining:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_child], [], [], max(min(left, CPU_POLL_S) if self._cpu_limit_s is not None else left, 0))
            if not ready:
                if self._cpu_limit_s is not None and time.monotonic() < deadline:
                    self._stop_past_cpu_limit(during)
                    continue
                self._fail_timeout(during)
            chunk = os.read(self._from_child, min(remaining, 1 << 20))
            if not chunk:
                self._fail_dead(during)
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _receive(self, timeout_s: float, during: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        (size,) = struct.unpack("<Q", self._read_exact(8, deadline, during))
        if size > _wire.MAX_MESSAGE_BYTES:
            self.stop()
            raise SubmissionCrashed(f"while {during}, your process sent a {size}-byte message, more than mlprep accepts")
        try:
            reply = _wire.decode(self._read_exact(size, deadline, during))
        except _wire.WireError as exc:
            self.stop()
            raise SubmissionCrashed(f"while {during}, your process sent something that is not a result ({exc})") from None
        if not isinstance(reply, dict) or "ok" not in reply:
            self.stop()
            raise SubmissionCrashed(f"while {during}, your process sent something that is not a result")
        return reply

    def _fail_timeout(self, during: str) -> None:
        limit = self._limit_s
        self.stop()
        raise SubmissionTimeout(f"time limit of {limit:.3g} s reached while {during}: an infinite loop, a deadlock, or far too slow",
                                {"limit_s": round(limit, 3)})

    def _stop_past_cpu_limit(self, during: str) -> None:
        """Under a CPU-time limit: stop the request once the learner's process has used that much CPU time."""
        reading = self.cpu_reading()
        limit = self._cpu_limit_s
        if reading is None or limit is None or reading.cpu_s < limit:
            return
        self.stop()
        raise SubmissionTimeout(f"CPU time limit reached while {during}", {"cpu_limit_reached": True})

    def _fail_dead(self, during: str) -> None:
        wait_status = self._wait_status(5.0)
        self.stop()
        if wait_status is None:
            raise SubmissionCrashed(f"your process closed its channel to mlprep while {during}")
        returncode = os.waitstatus_to_exitcode(wait_status)
        if returncode < 0:
            name = _signal_name(returncode)
            why = {"SIGSEGV": "a segmentation fault", "SIGKILL": "killed (often: out of memory)", "SIGABRT": "aborted"}.get(name, name)
            raise SubmissionCrashed(f"your process crashed with {name} ({why}) while {during}", {"signal": name})
        raise SubmissionCrashed(
            f"your process exited with code {returncode} while {during} (os._exit or a fatal error); return a value instead of exiting",
            {"exit_code": returncode},
        )
