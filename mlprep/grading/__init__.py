"""The grader toolkit: every grader in graders/ is written with these pieces and nothing else.

    @check("matches torch.optim.AdamW over 200 float64 steps")
    def lockstep_float64(sub, ctx):
        got = sub.call("adamw", w, g, m, v, 1)          # the learner's code, in the sandbox
        want = ctx.reference.adamw(w, g, m, v, 1)        # the reference, here
        assert_close(got[0], want[0], what="w", scenario="float64, shape (3, 4)")

Checks run in the judge process, which never runs learner code; the learner's code runs in a sandbox
process (_runner, _sandbox) that only hands back plain data. A failed check reports the call whose
result it judged (the submission's last, unless `on_input` names another) as Python the learner can
paste (_calls): try cases from small to large; `shrink_on_failure` shrinks random ones.

The parts (this face re-exports what graders use):
    checks      @check (check_each: a check that is one table), @scenario, fail / CheckFailed, GraderDefect, on_input, explained; Series
    handles     Submission (`sub`) and Context (`ctx`); when_raised
    values      reading what came back: expect_sequence, as_float, as_bool, as_int, expect_record
    compare     assert_close and the other assertions, tolerance_for
    expected    expected values judge side: logsumexp, log_softmax, central_differences, inputs_from_code
    mistakes    known mistakes as evidence for a hint: mistake_hint, matching_mistakes, same_values
    probes      inputs_unchanged, Snapshot, what code raises (raised_by, expect_raises), invariance_probe,
                gradcheck_float64, peak_traced_memory, control_value
    budgets     time_ratio, growth_check, measure_peak_memory, out_of_memory_said (running out of memory in the check's words)
    experiments rates over simulated runs in binomial bands (expect_rate); Student's t, chi-square, normal
    shrinking   shrink_on_failure, with the small cases of `cases` (grid, matrix, array_of, sized)
    crashes     a process killed at every step of a save (crash_points, in_child, half_written)
    training    training state snapshotted and compared (parameters_of, optimizer_state, state_of)
Families, for the graders of a few exercises alike: attention (its cases, probes and known mistakes),
losses (shifted_logits_hint, all_finite), networks (run_code: a case written once as code, run in the
sandbox and shown as the failing input).
The judge's own modules live beside them: engine (grading one file), diagnosis, repro (scripts), and
the sandbox's internals (_runner, _forkserver and _server, _sandbox, _isolation, _wire).
"""

from mlprep.grading._calls import Call, literal
from mlprep.grading._wire import Opaque, origin_device
from mlprep.grading import attention as attention  # the attention family's shared parts (causal-mask, gqa-attention, linear-attention, lora)
from mlprep.grading.budgets import Growth, PeakMemory, growth_check, measure_peak_memory, out_of_memory_said, time_ratio
from mlprep.grading.cases import array_of, grid, lists_of, matrix, sized
from mlprep.grading.checks import (MAX_SERIES_POINTS, CheckFailed, CheckSpec, GraderDefect, Series, check, check_each, explained, fail, on_input,
                                   reported_message, scenario, series_on_failure)
from mlprep.grading.crashes import (IN_FOLDER as IN_FOLDER, crash_points as crash_points, folder_files as folder_files, half_written as half_written,
                                    in_child as in_child, restore_folder as restore_folder, scratch_folder as scratch_folder)
from mlprep.grading.compare import (assert_close, assert_dtype, assert_equal, assert_finite, assert_keeps_precision, assert_returns_like, assert_shape,
                                    tolerance_for)
from mlprep.grading.expected import central_differences, inputs_from_code, log_softmax, logsumexp
from mlprep.grading.experiments import binomial_band, chi_square_quantile, chi_square_sf, expect_rate, normal_quantile, normal_sf, student_t_quantile, student_t_sf
from mlprep.grading.handles import Context, Interface, Submission, request_as_call, when_raised
from mlprep.grading.losses import all_finite as all_finite, shifted_logits_hint as shifted_logits_hint  # the loss graders' family
from mlprep.grading.mistakes import matching_mistakes, mistake_hint, same_values
from mlprep.grading.networks import attribute_copy as attribute_copy, run_code as run_code  # the network graders' family
from mlprep.grading.probes import (Snapshot, control_value, expect_raises, fail_if_changed, gradcheck_float64, inputs_unchanged, invariance_probe, outcome,
                                   peak_traced_memory, raised_by, value_and_grad)
from mlprep.grading.shrinking import shrink_on_failure
from mlprep.grading.training import largest_change as largest_change, optimizer_state as optimizer_state, parameters_of as parameters_of, state_of as state_of
from mlprep.grading.values import as_bool, as_float, as_int, describe_value, dtype_name, expect_record, expect_sequence
from mlprep.grading.values import listed as listed  # row numbers, sizes, ids in a message
from mlprep.grading.probes import InPlace as InPlace  # an input sorted or shuffled in place, told from one rewritten
from mlprep.text import plural

__all__ = [
    "check", "check_each", "scenario", "CheckFailed", "CheckSpec", "fail", "reported_message", "explained", "Opaque", "Submission", "Context", "Interface", "Call",
    "literal", "on_input", "when_raised", "shrink_on_failure", "grid", "lists_of", "matrix", "array_of", "sized", "assert_close", "assert_equal", "assert_finite",
    "assert_shape", "assert_dtype", "assert_returns_like", "assert_keeps_precision", "tolerance_for", "expect_sequence", "as_float", "as_bool", "as_int",
    "expect_record", "describe_value", "dtype_name", "inputs_unchanged", "Snapshot", "fail_if_changed", "outcome", "raised_by", "expect_raises", "control_value",
    "invariance_probe", "gradcheck_float64", "value_and_grad", "peak_traced_memory", "time_ratio", "growth_check", "Growth", "measure_peak_memory", "PeakMemory",
    "out_of_memory_said", "origin_device", "GraderDefect", "logsumexp", "log_softmax", "central_differences", "inputs_from_code", "mistake_hint",
    "matching_mistakes", "same_values", "Series", "series_on_failure", "MAX_SERIES_POINTS", "request_as_call", "plural", "binomial_band", "expect_rate",
    "student_t_sf", "student_t_quantile", "chi_square_sf", "chi_square_quantile", "normal_sf", "normal_quantile",
]
