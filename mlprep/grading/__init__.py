"""The grader toolkit: every grader in graders/ is written with these pieces and nothing else.

A grader is a module of checks:

    @check("matches torch.optim.AdamW over 200 float64 steps")
    def lockstep_float64(sub, ctx):
        got = sub.call("adamw", w, g, m, v, 1)          # the learner's code, in the sandbox
        want = ctx.reference.adamw(w, g, m, v, 1)        # the reference, here
        assert_close(got[0], want[0], what="w", scenario="float64, shape (3, 4)")

Checks run in the judge process, which never runs learner code; the learner's code runs in a sandbox
process (see _runner and _sandbox) that only ever hands back plain data. So whatever the learner's
code does to NumPy, torch or this package inside its own process, the comparisons here are untouched.

The smallest failing input comes with every failed check without any work in the grader: the
Submission remembers each call it makes, and a check that fails reports the call whose result it was
judging (the last one, unless the grader names another with `on_input`), written as Python the
learner can paste (see _calls). So a check should try its cases from small to large; where random
cases are drawn, `shrink_on_failure` asks Hypothesis for a smaller failing case once one fails.

The parts (this face re-exports what graders use):
    checks      @check, @scenario, fail / CheckFailed, GraderDefect, on_input; Series, series_on_failure
    handles     Submission (`sub`) and Context (`ctx`)
    values      reading what came back: expect_sequence, as_float
    compare     assert_close and the other assertions, tolerance_for
    expected    expected values judge side: logsumexp, log_softmax, inputs_from_code
    probes      inputs_unchanged, invariance_probe, gradcheck_float64, peak_traced_memory
    budgets     time_ratio, growth_check, measure_peak_memory
    shrinking   shrink_on_failure
The judge's own modules live beside them: engine (grading one file), diagnosis (known mistakes),
repro (scripts), and the sandbox's internals (_runner, the judge's handle on a sandbox; _forkserver and
_server, the process sandboxes are forked from; _sandbox, the learner's side; _isolation; _wire).

NumPy is imported here, torch only by the helpers that need it, Hypothesis only once a check has
failed and shrinks: NumPy-only graders stay fast.
"""

from mlprep.grading._calls import Call, literal
from mlprep.grading._wire import Opaque, origin_device
from mlprep.grading.budgets import Growth, PeakMemory, growth_check, measure_peak_memory, time_ratio
from mlprep.grading.checks import (MAX_SERIES_POINTS, CheckFailed, CheckSpec, GraderDefect, Series, check, fail, on_input, reported_message, scenario,
                                   series_on_failure)
from mlprep.grading.compare import (assert_close, assert_dtype, assert_equal, assert_finite, assert_keeps_precision, assert_returns_like, assert_shape,
                                    tolerance_for)
from mlprep.grading.expected import inputs_from_code, log_softmax, logsumexp
from mlprep.grading.handles import Context, Interface, Submission, request_as_call
from mlprep.grading.probes import gradcheck_float64, inputs_unchanged, invariance_probe, peak_traced_memory, value_and_grad
from mlprep.grading.shrinking import shrink_on_failure
from mlprep.grading.values import as_float, expect_sequence

__all__ = [
    "check", "scenario", "CheckFailed", "CheckSpec", "fail", "reported_message", "Opaque", "Submission", "Context", "Interface", "Call", "literal",
    "on_input", "shrink_on_failure", "assert_close", "assert_equal", "assert_finite", "assert_shape", "assert_dtype", "assert_returns_like",
    "assert_keeps_precision", "tolerance_for", "expect_sequence", "as_float", "inputs_unchanged", "invariance_probe", "gradcheck_float64",
    "value_and_grad", "peak_traced_memory", "time_ratio", "growth_check", "Growth", "measure_peak_memory", "PeakMemory", "origin_device",
    "GraderDefect", "logsumexp", "log_softmax", "inputs_from_code", "Series", "series_on_failure", "MAX_SERIES_POINTS", "request_as_call",
]
