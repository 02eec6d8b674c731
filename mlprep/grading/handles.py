"""The two handles a check gets: `sub`, the learner's code (reachable only through its sandbox), and
`ctx`, what the check knows besides (the device, the reference, seeded randomness)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import inspect
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from mlprep.grading._calls import Call, Described
from mlprep.grading._wire import decode, encode
from mlprep.grading.checks import GraderDefect, fail
from mlprep.grading.values import is_tensor

@dataclass
class Request:
    """One request as sent: what it ran, and the message as encoded for the sandbox (decoded again
    only to show its arguments)."""

    op: str  # "call" or "run"
    name: str  # the learner function, or the scenario's name
    scenario: Callable | None
    encoded: bytes
    device: str = "cpu"  # where the sandbox put the tensors of the arguments


class Submission:
    """The learner's code, reachable only through the sandbox.

    All its calls share one deadline: the check's time limit (see the engine), which `grant`
    extends for extra work the reference never does (shrinking a failure), within the grade's
    budget. It remembers its last request, the failing input a check reports by default."""

    def __init__(self, sandbox: Any, device: str, limit_s: float, grant_budget: Callable[[float], float] | None = None):
        self._sandbox = sandbox
        self.device = device
        self.limit_s = limit_s
        self._deadline = time.monotonic() + limit_s
        self._grant_budget = grant_budget or (lambda seconds: seconds)
        self.last_mutated: list[str] = []
        self.last_elapsed_s = 0.0
        # A timed run's cost: the CPU seconds of the learner's process (which the machine's load does not move), or the
        # wall seconds around the round trip where those cannot be measured (on a GPU, or with child processes).
        self.last_cost_s = 0.0
        self.last_request: Request | None = None
        self.in_flight: Request | None = None  # set while a request is running, kept if it never came back
        self._errstate: dict[str, str] = {}

    @contextlib.contextmanager
    def errstate(self, **settings: str) -> Iterator[None]:
        """Requests made inside run under `np.errstate(**settings)` in the sandbox, for contracts that
        allow no floating-point warning (`over="raise", divide="raise", invalid="raise"`): a warning
        then fails the check as a FloatingPointError that names the setting, and the failing input
        shows the `with np.errstate(...)` it ran under."""
        outer = self._errstate
        self._errstate = {**outer, **settings}
        try:
            yield
        finally:
            self._errstate = outer

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """Call the learner's `fn(*args, **kwargs)`; tensors in the arguments move to this check's device."""
        return self._request({"op": "call", "fn": fn, "args": list(args), "kwargs": kwargs}, f"running {fn}()", None)

    def run(self, scenario: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run `scenario(learner_module, *args, **kwargs)` in the sandbox; scenario is a module-level function."""
        return self._run(scenario, args, kwargs)

    def _cpu_reading(self) -> Any:
        # CPU time on the CPU only: a GPU's work is not the CPU's, and waiting for it may or may not spin.
        return self._sandbox.cpu_reading() if self.device == "cpu" else None

    def times_cpu(self) -> bool:
        """Whether a timed run now has its cost measured in CPU seconds (so that a cut-off is one in CPU seconds):
        on the CPU, where Linux lets the judge read the process's CPU clock, while it has no child processes."""
        reading = self._cpu_reading()
        return reading is not None and not reading.has_children

    def remaining_s(self) -> float:
        return max(self._deadline - time.monotonic(), 0.0)

    def grant(self, seconds: float) -> float:
        """Extend this check's time by up to `seconds` (what the grade's budget allows), from its deadline
        or from now if that has passed; returns the extension."""
        granted = max(0.0, self._grant_budget(seconds))
        self._deadline = max(self._deadline, time.monotonic()) + granted
        return granted

    def control(self, fn: str | Callable, *args: Any, **kwargs: Any) -> Any:
        """A call made only to choose a hint: a control case that differs from the failing one in one
        respect (the same data near the origin, the same input in float32...). It never becomes the
        check's failing input, and it answers None when the learner's code raises, crashes or hangs
        on it (then the sandbox may be gone: report the failure right after). `fn` is a learner
        function's name or a scenario."""
        from mlprep.grading._runner import SubmissionProblem

        last = self.last_request
        try:
            return self.run(fn, *args, **kwargs) if callable(fn) else self.call(fn, *args, **kwargs)
        except SubmissionProblem:
            return None
        finally:
            self.last_request, self.in_flight = last, None

    def _run(self, scenario: Callable, args: Sequence[Any], kwargs: dict, cutoff_s: float | None = None, timed: bool = False,
             cpu_cutoff_s: float | None = None) -> Any:
        message = {"op": "run", "module": scenario.__module__, "scenario": scenario.__name__, "args": list(args), "kwargs": kwargs}
        return self._request(message, f"running the scenario {scenario.__name__}", scenario, cutoff_s=cutoff_s, timed=timed,
                             cpu_cutoff_s=cpu_cutoff_s)

    def _request(self, message: dict[str, Any], during: str, scenario: Callable | None, cutoff_s: float | None = None, timed: bool = False,
                 cpu_cutoff_s: float | None = None) -> Any:
        """`cutoff_s`: wall seconds to stop the run at. `timed`: also measure the run's cost, `last_cost_s` (see
        there); then `cpu_cutoff_s` stops it once its process has used that much CPU time (see times_cpu)."""
        message["device"] = self.device
        if self._errstate:
            message["errstate"] = dict(self._errstate)
        request = Request(message["op"], message.get("fn") or message["scenario"], scenario, encode(message), self.device)
        self.in_flight = self.last_request = request
        before = self._cpu_reading() if timed else None
        cpu_limit = {"cpu_limit": (before, cpu_cutoff_s)} if before is not None and not before.has_children and cpu_cutoff_s is not None else {}
        start = time.perf_counter()
        remaining = self.remaining_s()
        if cutoff_s is not None and cutoff_s < remaining:
            reply = self._sandbox.request(request.encoded, cutoff_s, during, limit_s=cutoff_s, **cpu_limit)
        else:
            reply = self._sandbox.request(request.encoded, remaining, during, limit_s=self.limit_s, **cpu_limit)
        self.in_flight = None
        self.last_elapsed_s = time.perf_counter() - start
        if timed:
            from mlprep.grading._runner import cpu_seconds_between

            cpu_s = cpu_seconds_between(before, self._sandbox.cpu_reading() if before is not None else None)
            self.last_cost_s = self.last_elapsed_s if cpu_s is None else cpu_s
        self.last_mutated = list(reply.get("mutated") or [])
        return reply["value"]


class Interface:
    """The exercise's interface as the reference defines it: parameter names, for messages and inputs."""

    def __init__(self, reference: Any):
        self._reference = reference

    def params(self, fn_name: str) -> list[str]:
        try:
            return list(inspect.signature(getattr(self._reference, fn_name)).parameters)
        except (AttributeError, TypeError, ValueError):
            return []

    def param(self, fn_name: str, index: int) -> str:
        names = self.params(fn_name)
        return names[index] if index < len(names) else f"argument {index + 1}"


def request_as_call(request: Request, interface: Interface) -> Call:
    """A request as the learner's code it ran: a learner call as written, a scenario through its
    `repro` (see `scenario`), or else as the scenario's own call on the learner's module."""
    data = decode(request.encoded)
    if request.device != "cpu":
        _mark_device(data, request.device)
    args, kwargs = data["args"], data["kwargs"]
    if request.op == "call":
        call = Call(request.name, *args, **kwargs)
    elif getattr(request.scenario, "repro", None) is not None:
        made = request.scenario.repro(interface, *args, **kwargs)
        call = made if isinstance(made, Call) else Call.code(str(made))
    else:
        where = (request.scenario.__module__ if request.scenario else "").removeprefix("mlprep_grader_")
        call = Call(request.name, Described("<your module>"), *args, **kwargs, note=f"the grader's scenario {request.name} ({where})")
    return _under_errstate(call, data.get("errstate"))


def _under_errstate(call: Call, settings: dict[str, str] | None) -> Call:
    """The input as it ran: inside `with np.errstate(...)`, the value of its expression kept as `result`."""
    if not settings:
        return call
    lines = str(call).split("\n")
    if call.is_code:  # statements ending in an expression
        lines[-1] = f"result = {lines[-1]}"
    else:  # one expression, maybe over several lines
        lines[0] = f"result = {lines[0]}"
    setting = ", ".join(f'{k}="{v}"' for k, v in settings.items())
    return Call.code(f"with np.errstate({setting}):\n" + "".join(f"    {line}\n" for line in lines) + "result")


def _mark_device(value: Any, device: str) -> None:
    """The sandbox moved every tensor of a request to its device: say so where the input is shown."""
    if is_tensor(value):
        value.origin_device = device
    elif isinstance(value, (list, tuple)):
        for item in value:
            _mark_device(item, device)
    elif isinstance(value, dict):
        for item in value.values():
            _mark_device(item, device)


_REFERENCE_RESULTS: dict[tuple, Any] = {}  # run_reference_sandboxed's results, by reference, scenario and arguments


class Context:
    """What a check knows besides the submission: the device, the reference, seeded randomness."""

    def __init__(self, device: str, reference: Any, reference_sandbox: Callable[[], Submission] | None = None, load: float = 1.0):
        self.device = device
        self.load = load  # the machine's contention now (>= 1; about 1 when quiet): a timing's slack scales with it
        self.reference = reference
        self.interface = Interface(reference)
        self._reference_sandbox = reference_sandbox
        self._reference_submission: Submission | None = None

    def reference_submission(self) -> Submission:
        """The reference in a sandbox of its own, started on first use: timed the same way as the
        learner's code (a process of the same kind, the same round trip), so timings compare fairly."""
        if self._reference_submission is None:
            if self._reference_sandbox is None:
                raise GraderDefect("this context has no reference sandbox")
            self._reference_submission = self._reference_sandbox()
        return self._reference_submission

    def reference_key(self, scenario: Callable, *arguments: Any) -> tuple:
        """What a result of the reference on `scenario` depends on, for keeping it the judge process's life:
        the reference file (its path, time and size), the scenario, the device, and the arguments as the
        sandbox gets them (a repr would shorten a large array to "...")."""
        path = getattr(self.reference, "__file__", None)
        stat = os.stat(path) if path else None
        encoded = hashlib.sha256(encode(list(arguments))).hexdigest()
        return (path, stat and (stat.st_mtime_ns, stat.st_size), scenario.__module__, scenario.__qualname__, self.device, encoded)

    def run_reference_sandboxed(self, scenario: Callable, *args: Any, **kwargs: Any) -> Any:
        """The scenario on the reference in its own sandbox, a process like the learner's: what needs
        the same process state (RNG streams, bit-for-bit training runs) compares fairly. A failure
        there is the grader's defect, never the learner's.

        The scenario must seed every RNG it draws from: its result is then a function of the reference
        and the arguments, kept for the judge process's life (the self-check and batch grading judge
        many files against one reference; a training run is seconds) and handed out as a copy."""
        from mlprep.grading._runner import SubmissionProblem

        key = self.reference_key(scenario, args, kwargs)
        if key not in _REFERENCE_RESULTS:
            try:
                _REFERENCE_RESULTS[key] = self.reference_submission().run(scenario, *args, **kwargs)
            except SubmissionProblem as problem:
                raise GraderDefect(f"the reference failed the scenario {scenario.__name__} in its sandbox: {problem.message}") from None
        return copy.deepcopy(_REFERENCE_RESULTS[key])

    def rng(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    def run_reference(self, scenario: Callable, *args: Any, **kwargs: Any) -> Any:
        """The same scenario on the reference, here, on the CPU, with the same plain-data round trip."""
        result = scenario(self.reference, *copy.deepcopy(args), **copy.deepcopy(kwargs))
        return decode(encode(result))


@contextlib.contextmanager
def when_raised(kind: str | None = None, *, reword: Callable[[str], str] | None = None, fail_with: Callable[[str], str] | None = None,
                **details: Any) -> Iterator[None]:
    """What the learner's code raises inside this block, said in the check's words. `kind`: only an
    exception of that kind ("memory", "floating_point"; see the sandbox), None: any. With `reword`, the
    same error again (still an error of the learner's code) with reword(its first line) in place of that
    line, its traceback kept; with `fail_with`, a wrong answer (a failed check) whose message is
    fail_with(the error's message), with `details` (a callable one gets the exception's own text, as
    the code raised it: got=lambda text: f"FloatingPointError: {text}"; `explain`, fail's deferred hint,
    is handed to fail as it is)."""
    from mlprep.grading._runner import SubmissionRaised

    try:
        yield
    except SubmissionRaised as problem:
        if kind is not None and problem.details.get("kind") != kind:
            raise
        if fail_with is not None:
            own = str(problem.details.get("message", ""))
            fail(fail_with(problem.message), **{key: value(own) if callable(value) and key != "explain" else value for key, value in details.items()})
        if reword is not None:
            head, newline, rest = problem.message.partition("\n")
            raise SubmissionRaised(reword(head) + newline + rest, problem.details) from None
        raise
