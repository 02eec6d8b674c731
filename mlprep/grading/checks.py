"""Checks and their verdicts: `@check` marks a check, `fail` (or a CheckFailed) is a wrong answer with a
message for the learner, `GraderDefect` is mlprep's own fault, `on_input` names the call a failure is
about, `@scenario` says how a scenario's input reads as the learner's code, and a Series is a picture a
failure carries (the terminal draws it as sparklines: mlprep.screen.charts)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NoReturn, Sequence

import numpy as np

from mlprep.grading._calls import Call
from mlprep.results import MAX_DETAIL_ITEMS, jsonable

@dataclass(frozen=True)
class CheckSpec:
    """One check of a grader, as @check registered it."""
    name: str
    fn: Callable
    devices: tuple[str, ...] | None  # None: device-independent, runs once
    uses: tuple[str, ...] | None = None  # the interface names it calls; None: all of them
    edge: str = ""  # the prompt's sentence that settles the edge case this check judges ("" for the algorithm itself)


def check(name: str, *, devices: Sequence[str] | None = None, uses: Sequence[str] | None = None, edge: str = "") -> Callable:
    """Mark `fn(sub, ctx)` as a check. devices=("cpu", "cuda") runs it once per device. `uses` names
    the functions (or classes) of the interface it calls, when not all of them: after one of them
    hits its time limit, the checks that use it again are not run (a hang costs one time limit).
    `edge`: the check judges an edge case the contract settles (an empty input raises ValueError, a
    parameter's name), not the algorithm; the sentence of the prompt that settles it, which the
    failure quotes, and a grade whose only failures are edges says that the algorithm is right."""

    def mark(fn: Callable) -> Callable:
        fn.__mlprep_check__ = CheckSpec(name, fn, tuple(devices) if devices else None, tuple(uses) if uses else None, edge)
        return fn

    return mark


def check_each(name: str, cases: Sequence | Callable, judge: Callable, **options: Any) -> Callable:
    """A check that is one table: `judge(sub, *case)` for every case of `cases` (a sequence, or a function of
    ctx that makes one, from ctx.rng say), in order. `options` are @check's (devices, uses, edge).

        identical = check_each("identical samples give 0", IDENTICAL, judge_psi)"""

    @check(name, **options)
    def judge_each(sub: Any, ctx: Any) -> None:
        for case in cases(ctx) if callable(cases) else cases:
            judge(sub, *case)

    return judge_each


def scenario(*, repro: Callable[..., Call | str]) -> Callable:
    """Mark a grader's scenario function with how its input reads as learner code:
    `repro(interface, *args, **kwargs)` returns a Call (or code text) for the same arguments as the
    scenario; `interface.params(fn_name)` gives the interface's parameter names. Without one, a
    scenario's input is shown as the scenario's own call."""

    def mark(fn: Callable) -> Callable:
        fn.repro = repro
        return fn

    return mark


class CheckFailed(Exception):
    """A wrong answer: the message is for the learner, details are numbers for --json, and
    failing_input the call that gave it (None: the submission's last call).

    `explain()` is a hint that costs more work (a control call in the sandbox, known mistakes
    recomputed): it runs once, for the failure the check finally reports, after shrinking has chosen
    it, and its sentence follows the message (see `reported_message`). `notes` follow that.
    `series`, a Series, is a picture of what went wrong, kept in details["series"] as plain data."""

    def __init__(self, message: str, details: dict[str, Any] | None = None, failing_input: Call | None = None,
                 explain: Callable[[], str] | None = None, series: Series | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if series is not None:
            self.details = {**self.details, "series": series.as_details()}
        self.failing_input = failing_input
        self.explain = explain
        self.notes: list[str] = []


class GraderDefect(Exception):
    """The grader or the reference is wrong: reported as mlprep's fault, never the learner's."""


def fail(message: str, *, failing_input: Call | None = None, explain: Callable[[], str] | None = None, series: Series | None = None,
         **details: Any) -> NoReturn:
    raise CheckFailed(message, details, failing_input, explain, series)


def reported_message(failure: CheckFailed) -> str:
    """The message a failed check reports: its own, then its deferred explanation, then its notes.
    An explanation whose control call the learner's code breaks (raises, crashes, hangs) gives none."""
    from mlprep.grading._runner import SubmissionProblem  # the sandbox's client, which imports no toolkit part

    hint = ""
    if failure.explain is not None:
        try:
            hint = failure.explain() or ""
        except SubmissionProblem:
            hint = ""
    return " ".join(part.strip() for part in (failure.message, hint, *failure.notes) if part and part.strip())


@contextlib.contextmanager
def on_input(call: Call) -> Iterator[None]:
    """A check that fails inside this block reports `call` as its failing input (unless a failure
    inside named a more precise one): for checks that judge one call out of several made together,
    such as a step of a trajectory run in one scenario."""
    try:
        yield
    except CheckFailed as failure:
        if failure.failing_input is None:
            failure.failing_input = call
        raise


@contextlib.contextmanager
def explained(hint: Callable[[], str]) -> Iterator[None]:
    """A check that fails inside this block gets `hint()` as its deferred explanation (after the one it
    already carries, if any): a sentence of evidence, or "", worked out only for the failure the check
    finally reports (it may make control calls; see CheckFailed)."""
    try:
        yield
    except CheckFailed as failure:
        earlier = failure.explain
        failure.explain = hint if earlier is None else (lambda: joined(earlier(), hint()))
        raise


def joined(*parts: str) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


def in_scenario(scenario: str) -> str:
    return f" ({scenario})" if scenario else ""


MAX_SERIES_POINTS = MAX_DETAIL_ITEMS  # longer lists in details are cut: a series is downsampled to fit instead


@dataclass(frozen=True)
class Series:
    """A small series a failure carries, which the terminal draws as one sparkline per line on a
    shared scale (mlprep.screen.charts), the first point where the lines differ marked:

        fail(message, series=Series("loss scale per step", {"yours": got, "expected": want}, log_scale=True))

    `lines` maps names to sequences of numbers (floats, NumPy or 0-d torch values; None, or anything
    that is not a number, where a line has no point), the learner's line first; the lines may differ
    in length. `x` holds the points' x values (default 0, 1, 2, ...), named by `x_label`. In the
    check's details (key "series") it is plain JSON data: title, x_label, log_scale, x, lines (inf and
    NaN as "inf", "-inf", "NaN"), and at most MAX_SERIES_POINTS points: a longer series is downsampled
    evenly, keeping its last point and the first point where the lines differ, and says so in "note"."""

    title: str
    lines: dict[str, Sequence[Any]]
    x_label: str = "step"
    x: Sequence[Any] | None = None
    log_scale: bool = False

    def as_details(self) -> dict[str, Any]:
        n = max((len(values) for values in self.lines.values()), default=0)
        lines = {str(name): [_series_point(v) for v in values] + [None] * (n - len(values)) for name, values in self.lines.items()}
        x = list(range(n)) if self.x is None else [_series_point(v) for v in self.x]
        if len(x) < n:
            raise GraderDefect(f"series {self.title!r}: {len(x)} x values for {n} points")
        x = x[:n]
        keep, note = list(range(n)), ""
        if n > MAX_SERIES_POINTS:
            picks = {round(i * (n - 1) / (MAX_SERIES_POINTS - 1)) for i in range(MAX_SERIES_POINTS)}
            first = next((i for i, points in enumerate(zip(*lines.values())) if len(set(points)) > 1), None)
            if first is not None and first not in picks:
                picks.remove(min(picks - {0, n - 1}, key=lambda i: abs(i - first)))
                picks.add(first)
            keep = sorted(picks)
            note = f"downsampled from {n} to {len(keep)} points" + (f", the first difference ({self.x_label} {x[first]}) kept" if first is not None else "")
        details = {"title": str(self.title), "x_label": str(self.x_label), "log_scale": bool(self.log_scale), "x": [x[i] for i in keep],
                   "lines": {name: [values[i] for i in keep] for name, values in lines.items()}}
        return {**details, "note": note} if note else details


def _series_point(value: Any) -> Any:
    """One point as JSON data: a number (inf and NaN as strings), or None where there is none."""
    if value is None:
        return None
    if isinstance(value, (bool, int, np.integer)):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor of more than one element
        return None
    return jsonable(number)


@contextlib.contextmanager
def series_on_failure(make: Callable[[], Series | None]) -> Iterator[None]:
    """A check that fails inside this block carries the series `make()` returns, unless the failure
    already carries one: the way to picture failures raised by the toolkit's assertions (assert_close,
    as_float...) while a check walks a trajectory. `make` runs only on a failure; it returns None when
    it has nothing to show (a record too malformed to draw), and must not raise."""
    try:
        yield
    except CheckFailed as failure:
        if "series" not in failure.details:
            series = make()
            if series is not None:
                failure.details = {**failure.details, "series": series.as_details()}
        raise
