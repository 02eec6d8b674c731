"""The comparison helpers every grader uses: tolerances from the dtype, messages a learner can act on."""

import numpy as np
import pytest
import torch

from mlprep.grading import (CheckFailed, Opaque, as_float, assert_close, assert_dtype, assert_equal, assert_finite,
                            assert_shape, expect_sequence, tolerance_for)


@pytest.mark.parametrize(
    "dtype, expected",
    [(torch.float64, (1e-7, 1e-7)), (torch.float32, (1.3e-6, 1e-5)), (torch.float16, (1e-3, 1e-5)),
     (torch.bfloat16, (1.6e-2, 1e-5)), (np.float32, (1.3e-6, 1e-5)), ("float64", (1e-7, 1e-7)), (torch.int64, (0.0, 0.0))],
)
def test_tolerances_are_torch_testing_defaults(dtype, expected):
    assert tolerance_for(dtype) == expected


def test_assert_close_uses_the_dtype_of_the_expected_value():
    want = torch.tensor([1.0, 2.0], dtype=torch.float32)
    assert_close(want * (1 + 1e-6), want, what="x")  # inside float32's rtol
    with pytest.raises(CheckFailed):
        assert_close(want * (1 + 1e-6), want.double(), what="x")  # outside float64's


def test_failure_message_names_index_expected_got_and_errors():
    want = np.zeros((2, 3))
    got = want.copy()
    got[1, 2] = 0.5
    with pytest.raises(CheckFailed) as info:
        assert_close(got, want, what="w after step 3", scenario="float64, shape (2, 3)", hint="look at the decay")
    message = info.value.message
    for piece in ("w after step 3", "float64, shape (2, 3)", "1 of 6 values differ", "index (1, 2)", "expected 0", "got 0.5", "look at the decay"):
        assert piece in message
    assert info.value.details["max_abs_err"] == 0.5


def test_non_finite_where_finite_expected_is_called_out():
    with pytest.raises(CheckFailed) as info:
        assert_close(np.array([1.0, np.inf]), np.array([1.0, 2.0]), what="loss")
    assert "expected finite values, got inf at index (1,)" in info.value.message


def test_shapes_must_match_but_containers_need_not():
    assert_close(np.float64(2.0), torch.tensor(2.0, dtype=torch.float64), what="scalar")
    assert_close([np.ones(2), np.zeros(1)], (torch.ones(2, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)), what="pair")
    with pytest.raises(CheckFailed, match=r"expected shape \(3,\), got shape \(1, 3\)"):
        assert_close(np.ones((1, 3)), np.ones(3), what="v")


@pytest.mark.parametrize("bad", [None, Opaque("Foo", "<Foo>"), "text", [1.0, 2.0]])
def test_wrong_types_fail_cleanly(bad):
    with pytest.raises(CheckFailed):
        assert_close(bad, np.ones(3), what="v")
    with pytest.raises(CheckFailed):
        assert_finite(Opaque("Foo", "x") if bad is None else bad, what="v") if not isinstance(bad, list) else expect_sequence(bad, 3, what="v")


def test_nan_handling():
    with pytest.raises(CheckFailed):
        assert_close(np.array([np.nan]), np.array([np.nan]), what="x")
    assert_close(np.array([np.nan]), np.array([np.nan]), what="x", equal_nan=True)
    assert_close(np.array([np.inf]), np.array([np.inf]), what="x")


def test_assert_equal_exact_and_nested():
    assert_equal([np.array([1, 2]), 3], [np.array([1, 2]), 3], what="r")
    with pytest.raises(CheckFailed, match="index \\(1,\\): expected 2, got 3"):
        assert_equal(np.array([1, 3]), np.array([1, 2]), what="idx")
    with pytest.raises(CheckFailed):
        assert_equal("a", "b", what="s")


def test_shape_dtype_scalar_and_sequence_helpers():
    assert_shape(torch.zeros(2, 3), (2, 3), what="x")
    with pytest.raises(CheckFailed):
        assert_shape(torch.zeros(3, 2), (2, 3), what="x")
    assert_dtype(torch.zeros(1, dtype=torch.bfloat16), "bfloat16", what="x")
    with pytest.raises(CheckFailed, match="expected dtype float32, got float64"):
        assert_dtype(np.zeros(1), torch.float32, what="x")
    assert as_float(torch.tensor(2.5), what="loss") == 2.5
    assert as_float(np.float32(1.5), what="loss") == 1.5
    with pytest.raises(CheckFailed):
        as_float(np.ones(3), what="loss")
    with pytest.raises(CheckFailed, match="expected a tuple of 3 values, got None"):
        expect_sequence(None, 3, what="(w, m, v)")


class ScriptedSubmission:
    """Stands in for the sandbox: returns the given outputs in order."""

    last_request = None

    def __init__(self, *outputs):
        self.outputs = list(outputs)

    def call(self, fn_name, *args, **kwargs):
        return self.outputs.pop(0)


def test_invariance_probe_compares_only_the_graded_part():
    from mlprep.grading import invariance_probe

    base = torch.arange(6.0).reshape(2, 3)
    leaked = base.clone()
    leaked[1, 0] = 99.0  # a later position moved: allowed
    invariance_probe(ScriptedSubmission(base, leaked), "f", (), (), shape=(2, 3), graded=lambda out: out[0], what="row 0", scenario="s")
    leaked[0, 2] = -1.0  # a graded position moved: caught, with where
    with pytest.raises(CheckFailed, match=r"row 0 \(s\): 1 of 3 values differ; first at index \(2,\)"):
        invariance_probe(ScriptedSubmission(base, leaked), "f", (), (), shape=(2, 3), graded=lambda out: out[0], what="row 0", scenario="s")


@pytest.mark.parametrize("outputs", [(None, torch.zeros(2, 3)), (torch.zeros(2, 3), torch.zeros(3, 2)), (Opaque("X", "x"), Opaque("X", "x"))])
def test_invariance_probe_fails_cleanly_on_bad_outputs(outputs):
    from mlprep.grading import invariance_probe

    with pytest.raises(CheckFailed):
        invariance_probe(ScriptedSubmission(*outputs), "f", (), (), shape=(2, 3), graded=lambda out: out[0], what="row 0", scenario="s")
