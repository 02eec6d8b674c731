"""Shrinking: after a failure, Hypothesis looks for the smallest case that fails too."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Iterator

from mlprep.grading._calls import complete
from mlprep.grading.checks import CheckFailed
from mlprep.grading.handles import Interface, Submission, request_as_call

SHRINK_BUDGET_S = 1.0  # extra time a failed check may spend looking for a smaller failing case (the grade caps the total)
SHRINK_EXAMPLES = 200  # cases Hypothesis may try before it gives up finding a failing one


# Hypothesis reads the source of the strategies' lambdas with `ast` to describe them, which is not
# thread-safe on CPython 3.11 (SystemError in the self-check's parallel grades): one search at a time.
_hypothesis_lock = threading.Lock()


class _StopShrinking(BaseException):
    """Out of time, or the sandbox is gone: a BaseException, so Hypothesis does not take it for a failure."""


@contextlib.contextmanager
def shrink_on_failure(sub: Submission, cases: Callable[[], Any], verify: Callable[[Any], None], *,
                      worth_shrinking: Callable[[CheckFailed], bool] | None = None,
                      budget_s: float = SHRINK_BUDGET_S, max_examples: int = SHRINK_EXAMPLES) -> Iterator[None]:
    """If the block fails, look for the smallest case that fails too, and report that one instead.

    `cases()` returns a Hypothesis strategy of cases of this check (drawn and shrunk by Hypothesis:
    shapes shrink toward 0-d and 1 element, numbers toward 0 and small integers), and `verify(case)`
    checks one case against the learner's code, raising CheckFailed (with a message about that case)
    when it fails. Hypothesis runs only after the block failed, deterministically (derandomized, no
    database), within `budget_s` extra seconds (and what is left of the grade's allowance for
    shrinking). `worth_shrinking(failure)` says whether the block's failure is worth it; by default,
    when its failing input is too large to show in full. When it is not, when Hypothesis finds no
    failing case, or when the learner's code raises or hangs on the ones it tries, the block's own
    failure stands. Order a check's own cases small to large first: a small case that fails needs no
    shrinking."""
    try:
        yield
    except CheckFailed as original:
        if original.failing_input is None and sub.last_request is not None:
            original.failing_input = request_as_call(sub.last_request, Interface(None))
        too_large = lambda failure: failure.failing_input is None or not complete(str(failure.failing_input))
        if not (worth_shrinking or too_large)(original):
            raise
        smaller = _smallest_failure(sub, cases, verify, budget_s, max_examples)
        if smaller is None:
            raise
        first = str(original.details.get("scenario") or original.message.split(":")[0])
        first = first if len(first) <= 160 else first[:160] + "…"
        smaller.notes.append(f"(The smallest failing case found by shrinking; the check first failed on: {first}.)")
        smaller.details.setdefault("first_failure", str(first))
        raise smaller from None


def _smallest_failure(sub: Submission, cases: Callable[[], Any], verify: Callable[[Any], None], budget_s: float,
                      max_examples: int) -> CheckFailed | None:
    from hypothesis import HealthCheck, Phase, Verbosity, find, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    from mlprep.workspace import data_dir

    # Hypothesis caches what it learns from source files in a `.hypothesis` folder of the current
    # directory: in mlprep's cache instead, never in the learner's folder.
    set_hypothesis_home_dir(data_dir() / "cache" / "hypothesis")

    from mlprep.grading._runner import SubmissionProblem, SubmissionRaised

    found: list[CheckFailed] = []
    deadline = 0.0  # set once this search holds the lock: waiting for another grade's search is not its time

    def fails(case: Any) -> bool:
        if time.monotonic() > deadline:
            raise _StopShrinking
        try:
            verify(case)
        except CheckFailed as failure:
            if failure.failing_input is None and sub.last_request is not None:
                failure.failing_input = request_as_call(sub.last_request, Interface(None))
            found.append(failure)  # Hypothesis only ever accepts smaller failing cases: the last is the smallest
            return True
        except SubmissionRaised:
            return False  # raising on this case is another kind of failure, not this check's
        except SubmissionProblem:
            raise _StopShrinking from None  # a crash or a hang: the sandbox is gone
        return False

    quiet = settings(database=None, derandomize=True, max_examples=max_examples, deadline=None, phases=(Phase.generate, Phase.shrink),
                     suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    with _hypothesis_lock:
        deadline = time.monotonic() + sub.grant(budget_s)
        try:
            find(cases(), fails, settings=quiet)
        except (_StopShrinking, NoSuchExample, Unsatisfiable):
            pass
    return found[-1] if found else None
