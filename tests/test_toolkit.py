"""The comparison helpers every grader uses: tolerances from the dtype, messages a learner can act on."""

import numpy as np
import pytest
import torch

from mlprep.grading import (
    Call,
    CheckFailed,
    Interface,
    Opaque,
    Submission,
    as_float,
    assert_close,
    assert_dtype,
    assert_equal,
    assert_finite,
    assert_keeps_precision,
    assert_returns_like,
    assert_shape,
    expect_sequence,
    fail,
    on_input,
    reported_message,
    request_as_call,
    shrink_on_failure,
    tolerance_for,
)
from mlprep.grading._calls import complete, literal
from mlprep.grading._wire import decode


@pytest.mark.parametrize(
    "dtype, expected",
    [
        (torch.float64, (1e-7, 1e-7)),
        (torch.float32, (1.3e-6, 1e-5)),
        (torch.float16, (1e-3, 1e-5)),
        (torch.bfloat16, (1.6e-2, 1e-5)),
        (np.float32, (1.3e-6, 1e-5)),
        ("float64", (1e-7, 1e-7)),
        (torch.int64, (0.0, 0.0)),
    ],
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


def test_an_expected_infinity_is_matched_only_by_itself():
    assert_close(np.array([np.inf, -np.inf, 1.0]), np.array([np.inf, -np.inf, 1.0]), what="x")
    for got in (10.8, -np.inf, np.nan):
        with pytest.raises(CheckFailed):
            assert_close(np.array([got]), np.array([np.inf]), what="x")


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


# -- failing inputs as Python ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        np.array([0.1, -2.5, np.nan, np.inf, -np.inf]),
        np.array([[1, 2], [3, 4]], dtype=np.int32),
        np.array(0.5),
        np.float32(0.1),
        np.array([0.1, 1e-8, 65504.0], dtype=np.float16),
        np.array([True, False]),
        torch.tensor([0.1, -3.0], dtype=torch.float64),
        torch.tensor([[0.1]], dtype=torch.bfloat16),
        torch.tensor([1e-8, 0.3]),
        torch.tensor(7),
        torch.tensor([True]),
        [[0, 4], [7.5, 3]],
        (1,),
        {"lr": 0.1, "wd": 0.0},
        None,
        "text",
        3,
        -0.0,
        np.zeros((0, 3)),
        np.zeros((2, 0), dtype=np.int32),
        torch.zeros(0, 4),
        torch.zeros(0, dtype=torch.float64),
    ],
)
def test_a_literal_reads_back_as_the_same_value(value):
    text = literal(value)
    assert complete(text)
    again = eval(text, {"np": np, "torch": torch})
    if isinstance(value, (np.ndarray, np.generic)):
        assert isinstance(again, type(value)) and again.dtype == value.dtype
        np.testing.assert_array_equal(again, value)
    elif isinstance(value, torch.Tensor):
        assert again.dtype == value.dtype
        torch.testing.assert_close(again, value, rtol=0, atol=0, equal_nan=True)
    else:
        assert again == value and type(again) is type(value)


def test_large_values_are_described_not_written_out():
    text = literal(np.zeros((200, 7)))
    assert text == "<a float64 array of shape (200, 7), values 0 to 0>" and not complete(text)
    assert not complete(literal([np.ones(3)] * 10))  # 30 numbers in all
    assert complete(literal(np.ones(20))) and not complete(literal(np.ones(21)))
    call = Call("knn", np.zeros((300, 5)), np.ones((1, 5)), 4, max_bytes=1024, note="k nearest")
    assert not complete(str(call)) and str(call).endswith(")  # k nearest") and "max_bytes=1024" in str(call)


def test_a_call_is_one_line_when_short():
    assert str(Call("adamw", np.array(0.0), np.array(1.0), 1, lr=0.01)) == "adamw(np.array(0.0), np.array(1.0), 1, lr=0.01)"


class LocalSandbox:
    """Stands in for a sandbox: runs `fn` here on the message, decoded as the sandbox would."""

    def __init__(self, fn):
        self.fn = fn

    def request(self, message, timeout_s, during, limit_s=None):
        message = decode(message)
        return {"ok": True, "value": self.fn(*message["args"], **message["kwargs"]), "mutated": []}


def test_a_submission_reports_its_last_call_as_the_failing_input():
    sub = Submission(LocalSandbox(lambda a, b, scale: a - b), "cpu", 10.0)
    sub.call("add", np.array([1.0, 2.0]), 3, scale=0.5)
    assert str(request_as_call(sub.last_request, Interface(None))) == "add(np.array([1.0, 2.0]), 3, scale=0.5)"


def test_on_input_names_the_input_unless_the_failure_has_one():
    with pytest.raises(CheckFailed) as outer:
        with on_input(Call("f", 1)):
            fail("wrong")
    assert str(outer.value.failing_input) == "f(1)"
    with pytest.raises(CheckFailed) as inner:
        with on_input(Call("f", 1)):
            fail("wrong", failing_input=Call("f", 2))
    assert str(inner.value.failing_input) == "f(2)"


def test_shrinking_finds_the_smallest_failing_case(tmp_path, monkeypatch, mlprep_home):
    """A sum that is off by one once any item reaches 7: the check fails on a long random list, and
    shrinking reports the smallest list that still fails, [7]. Hypothesis's own cache goes to
    mlprep's data folder, never into the current directory."""
    from hypothesis import strategies as st

    monkeypatch.chdir(tmp_path)

    buggy = lambda xs: sum(xs) + (1 if xs and max(xs) >= 7 else 0)
    sub = Submission(LocalSandbox(buggy), "cpu", 10.0)

    def verify(xs):
        assert_equal(sub.call("total", xs), sum(xs), what=f"total({xs})")

    with pytest.raises(CheckFailed) as info:
        # A generous budget: Hypothesis's search is deterministic, only a time cut-off could end it early.
        with shrink_on_failure(sub, lambda: st.lists(st.integers(0, 100)), verify, budget_s=60):
            verify(list(range(40)))
    assert str(info.value.failing_input) == "total([7])"
    assert not (tmp_path / ".hypothesis").exists() and (mlprep_home / "cache" / "hypothesis").is_dir()
    assert info.value.message == "total([7]): 1 of 1 values differ; first at index (scalar): expected 7, got 8."
    assert reported_message(info.value).startswith(info.value.message + " (The smallest failing case found by shrinking; the check first failed on: total([0, 1, 2")


def test_a_deferred_explanation_runs_once_for_the_failure_reported():
    """Shrinking discards most failures: an explanation that costs work is only computed for the one reported."""
    from hypothesis import strategies as st

    explained = []
    sub = Submission(LocalSandbox(lambda xs: sum(xs) + (len(xs) > 1)), "cpu", 10.0)

    def verify(xs):
        got = sub.call("total", xs)
        if got != sum(xs):
            fail(f"total({xs}) is {got}", explain=lambda: explained.append(list(xs)) or f"it is off by {got - sum(xs)}")

    with pytest.raises(CheckFailed) as info:
        with shrink_on_failure(sub, lambda: st.lists(st.integers(0, 9)), verify, budget_s=60):
            verify(list(range(30)))
    assert explained == []
    assert reported_message(info.value).startswith("total([0, 0]) is 1 it is off by 1 (The smallest failing case")
    assert explained == [[0, 0]]


def test_shrinking_is_skipped_when_the_failing_input_is_already_small():
    from hypothesis import strategies as st

    sub = Submission(LocalSandbox(lambda xs: sum(xs) + 1), "cpu", 10.0)
    with pytest.raises(CheckFailed) as info:
        with shrink_on_failure(sub, lambda: pytest.fail("no shrinking for a small input") or st.just([0]), lambda xs: None):
            assert_equal(sub.call("total", [3, 4]), 7, what="total([3, 4])")
    assert str(info.value.failing_input) == "total([3, 4])"


def test_shrinking_keeps_the_first_failure_when_no_case_fails():
    from hypothesis import strategies as st

    sub = Submission(LocalSandbox(lambda xs: sum(xs)), "cpu", 10.0)
    with pytest.raises(CheckFailed, match="the big case"):
        with shrink_on_failure(sub, lambda: st.lists(st.integers(0, 3)), lambda xs: assert_equal(sub.call("total", xs), sum(xs), what="x"), budget_s=60):
            sub.call("total", list(range(40)))
            fail("the big case")


# -- containers, devices, precision ----------------------------------------------------------------


def test_array_agnostic_results_come_back_as_they_went_in():
    assert_returns_like(torch.zeros(2), torch.ones(2), what="w")
    assert_returns_like(np.float64(1.0), np.array(1.0), what="w")  # NumPy turns 0-d results into scalars
    with pytest.raises(CheckFailed, match="expected a torch tensor for torch inputs, got an array"):
        assert_returns_like(np.zeros(2), torch.ones(2), what="w")
    with pytest.raises(CheckFailed, match="expected a NumPy array for NumPy inputs"):
        assert_returns_like(torch.zeros(2), np.ones(2), what="w")
    on_cuda = torch.zeros(2)
    on_cuda.origin_device = "cuda:0"  # how a tensor decoded in the judge remembers the sandbox's device
    assert_returns_like(on_cuda, torch.ones(2), what="w", device="cuda")
    with pytest.raises(CheckFailed, match="expected a tensor on cuda, the input's device, got one on cpu"):
        assert_returns_like(torch.zeros(2), torch.ones(2), what="w", device="cuda")


def test_precision_is_never_lost_silently():
    assert_keeps_precision(torch.tensor(1.0, dtype=torch.float64), torch.float64, what="loss")
    assert_keeps_precision(0.5, torch.float64, what="loss")  # a Python float is a float64
    assert_keeps_precision(torch.tensor(1.0), torch.float16, what="loss")  # half precision may compute in float32
    assert_keeps_precision(torch.tensor(1.0, dtype=torch.float16), torch.float16, what="loss")
    with pytest.raises(CheckFailed, match="the inputs are float64 but the result is float32"):
        assert_keeps_precision(torch.tensor(1.0), torch.float64, what="loss")
    with pytest.raises(CheckFailed, match="the inputs are float32 but the result is float16"):
        assert_keeps_precision(np.float16(1.0), np.float32, what="loss")


def test_a_probe_names_the_part_that_moved():
    from mlprep.grading import invariance_probe

    base, moved = torch.zeros(2, 3), torch.zeros(2, 3)
    moved[1, 2] = 5.0
    parts = lambda out: {"outputs at real queries": out[0], "outputs at queries that see no key": out[1]}
    with pytest.raises(CheckFailed, match=r"padding probe: outputs at queries that see no key \(s\): 1 of 3 values differ") as info:
        invariance_probe(ScriptedSubmission(base, moved), "f", (), (), graded=parts, what="padding probe", scenario="s")
    assert "real queries" not in info.value.message


def test_the_interface_names_parameters_as_the_reference_does():
    reference = type("Reference", (), {"attention": staticmethod(lambda q, k, v, keep: None)})
    assert Interface(reference).params("attention") == ["q", "k", "v", "keep"]
    assert Interface(reference).param("attention", 1) == "k" and Interface(reference).param("attention", 9) == "argument 10"
    assert Interface(reference).params("missing") == []


# -- the parts graders share: known mistakes, what code raises, readers, small cases -----------------------


def test_same_values_compares_values_not_containers_and_never_raises():
    from mlprep.grading import same_values

    assert same_values((np.array([1.0, 2.0]), 3), [torch.tensor([1.0, 2.0 + 1e-12], dtype=torch.float64), 3.0], rtol=1e-9)
    assert not same_values(np.array([1.0, 2.0]), np.array([1.0, 2.1]), rtol=1e-3)
    assert not same_values(np.array([1.0]), np.array([[1.0]]))  # another shape
    assert same_values(float("inf"), float("inf")) and not same_values(1e308, float("inf"), rtol=1.0)  # an infinity only matches itself
    assert not same_values(float("nan"), float("nan")) and same_values(float("nan"), float("nan"), equal_nan=True)
    assert same_values({"a": [1, 2]}, {"a": [1, 2]}) and not same_values({"a": 1}, {"b": 1})
    assert not same_values(Opaque("Thing", "<Thing>"), np.zeros(2)) and not same_values("text", np.zeros(2))
    assert same_values(None, None) and not same_values(None, 0)


def test_a_mistake_is_named_only_when_the_values_show_it_alone():
    from mlprep.grading import matching_mistakes, mistake_hint

    mistakes = {"the sum, not the mean": 6.0, "the first element only": 1.0, "the right value too": 2.0, "not on this input": None}
    assert mistake_hint(6.0, mistakes, want=2.0) == "Your result matches one where the sum, not the mean."
    assert mistake_hint(2.0, mistakes, want=2.0) == ""  # a mistake that gives the right answer here is no evidence
    assert mistake_hint(5.0, mistakes, want=2.0) == ""
    twins = {"a": 1.0, "b": 1.0 + 1e-13}
    assert mistake_hint(1.0, twins, want=0.0) == ""  # two explain it: neither is named...
    assert mistake_hint(1.0, twins, want=0.0, two="{} or {}") == "a or b"  # ...unless both are
    assert mistake_hint(1.0, twins, want=0.0, join="; or ", say="It is {}.") == "It is a; or b."
    assert matching_mistakes(1.0, [("lazy", lambda: 1.0), ("lazy", lambda: 1.0)]) == ["lazy"]  # computed when reached, each text once
    assert matching_mistakes(float("inf"), {"overflow": float("inf")}, finite_only=True) == []


def test_explained_chains_a_hint_onto_a_failure():
    from mlprep.grading import explained

    with pytest.raises(CheckFailed) as info:
        with explained(lambda: "second."):
            with explained(lambda: "first."):
                fail("wrong.")
    assert reported_message(info.value) == "wrong. first. second."


def test_what_code_raises_is_judged_from_plain_data():
    from mlprep.grading import expect_raises, outcome

    def bad():
        raise ValueError("k must be at least 1")

    class Narrower(ValueError):
        pass

    def narrower():
        raise Narrower("k")

    record = outcome(bad)
    assert record["raised"] == "ValueError" and record["message"] == "k must be at least 1"
    assert expect_raises(record, what="knn(X, Q, 0)") is record
    assert expect_raises(outcome(narrower), what="x")["raised"] == "Narrower"  # a subclass counts...
    with pytest.raises(CheckFailed, match="expected ValueError, but it raised Narrower: k; raise"):
        expect_raises(outcome(narrower), what="x", exact=True, raised_hint="raise ValueError itself")  # ...unless exact
    with pytest.raises(CheckFailed) as info:
        expect_raises(outcome(lambda: 3), what="knn(X, Q, 0)", returned_hint="check k first")
    assert info.value.message == "knn(X, Q, 0): expected ValueError, but it returned int 3; check k first"
    assert info.value.details["got"] == "no exception"


def test_a_snapshot_names_the_inputs_changed_in_place():
    from mlprep.grading import Snapshot, fail_if_changed

    X, y = np.zeros((2, 2)), np.array([0, 1])
    before = Snapshot(X=X, y=y)
    X[0, 0] = 1.0
    assert before.changed() == ["X"]
    with pytest.raises(CheckFailed, match="fit\\(\\) changed X in place"):
        fail_if_changed(before.changed(), who="fit()")
    fail_if_changed([], who="fit()")


def test_readers_of_flags_and_counts():
    from mlprep.grading import as_bool, as_int, expect_record

    assert as_bool(np.bool_(False), what="stop") is False and as_bool(torch.tensor(True), what="stop") is True
    for bad in (1, 0.0, "yes", np.array([True])):
        with pytest.raises(CheckFailed, match="expected True or False"):
            as_bool(bad, what="stop")
    assert as_int(np.int64(3), what="n") == 3 and as_int(torch.tensor(2), what="n") == 2
    with pytest.raises(CheckFailed, match="expected an integer"):
        as_int(2.0, what="n")
    assert expect_record({"loss": 1.0}, ["loss"], what="run") == {"loss": 1.0}
    with pytest.raises(CheckFailed, match="without steps"):
        expect_record({"loss": 1.0}, ["loss", "steps"], what="run")


def test_small_cases_are_exact_grid_values_of_the_shape_asked():
    from hypothesis import given, settings

    from mlprep.grading import array_of, grid, matrix, sized

    @settings(max_examples=30, database=None, derandomize=True)
    @given(grid(-8, 8, 2), matrix(2, 3, grid(0, 4)), array_of((1, 2, 2), grid(-2, 2)), sized((1, 3), then=lambda n: matrix(n, n, grid(0, 1))))
    def drawn(half, m, a, square):
        assert half * 2 == int(half * 2) and -4 <= half <= 4
        assert m.shape == (2, 3) and m.dtype == np.float64 and set(np.unique(m)) <= {0, 1, 2, 3, 4}
        assert a.shape == (1, 2, 2)
        assert square.shape[0] == square.shape[1] in (1, 2, 3)

    drawn()


def test_central_differences_match_an_analytic_gradient():
    from mlprep.grading import central_differences

    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    assert_close(central_differences(lambda z: float((z**3).sum()), x), 3 * x**2, what="grad", rtol=1e-8, atol=1e-8)


def test_items_are_listed_in_words_up_to_a_limit():
    from mlprep.grading import listed

    assert listed(np.array([3, 5, 8])) == "3, 5, 8"
    assert listed(range(12)) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ..." and listed(range(12), 12) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11"
    assert listed([]) == "" and listed(np.array([], dtype=np.int64), empty="none") == "none"


def test_an_input_reordered_in_place_is_told_from_one_rewritten():
    from mlprep.grading import InPlace

    X, y, w, fixed = np.arange(6.0).reshape(3, 2), np.array(["c", "a", "b"]), np.ones(2), [3, 1, 2]
    before = InPlace(X=X, y=y, w=w, fixed=fixed, scalar=np.float64(1.0))
    X[[0, 2]] = X[[2, 0]]  # rows swapped: the same rows
    y.sort()
    w *= 2  # new values
    assert before.changed() == ["X", "y", "w"] and before.reordered() == ["X", "y"]
    fixed.sort()
    assert before.reordered() == ["X", "y", "fixed"]
    X[0, 0] = 99.0
    assert before.reordered() == ["y", "fixed"]


def test_a_failure_made_of_a_raised_error_reads_its_details_from_the_error():
    from mlprep.grading import when_raised
    from mlprep.grading._runner import SubmissionRaised

    warning = {"kind": "floating_point", "message": "overflow encountered in exp"}
    with pytest.raises(CheckFailed) as info:
        with when_raised(
            "floating_point",
            fail_with=lambda message: f"sigmoid: {message.partition(chr(10))[0]}",
            what="sigmoid's warning",
            got=lambda text: f"FloatingPointError: {text}",
        ):
            raise SubmissionRaised("NumPy raised a floating-point warning (overflow encountered in exp)\n  line 3, in sigmoid", warning)
    assert info.value.message == "sigmoid: NumPy raised a floating-point warning (overflow encountered in exp)"
    assert info.value.details == {"what": "sigmoid's warning", "got": "FloatingPointError: overflow encountered in exp"}


def test_a_non_finite_loss_at_large_logits_is_explained_by_the_same_logits_shifted_by_their_row_maximum():
    from mlprep.grading import shifted_logits_hint

    def unshifted(logits):  # log-sum-exp without the maximum: exp(1e4) overflows
        with np.errstate(all="ignore"):
            return float(np.log(np.exp(logits).sum(axis=-1)).mean() - logits[:, 0].mean())

    def log_of_softmax(logits):  # a stable softmax, then its log: a probability that underflows to 0 is log(0)
        with np.errstate(all="ignore"):
            z = np.exp(logits - logits.max(axis=-1, keepdims=True))
            return float(-np.log(z[:, 1] / z.sum(axis=-1)).mean())

    big = np.array([[1e4, 0.0], [0.0, 5.0]])
    overflow = shifted_logits_hint(Submission(LocalSandbox(unshifted), "cpu", 10.0), "ce", big)
    assert overflow.startswith("The same logits shifted by their row maximum (the same loss) give a finite result, so exp overflowed")
    assert shifted_logits_hint(Submission(LocalSandbox(unshifted), "cpu", 10.0), "ce", big / 100) == ""  # not large: no evidence either way
    underflow = shifted_logits_hint(Submission(LocalSandbox(log_of_softmax), "cpu", 10.0), "ce", big)
    assert "a row spans 10000, so exp of its smallest entry minus the maximum underflows to 0" in underflow
    assert shifted_logits_hint(Submission(LocalSandbox(log_of_softmax), "cpu", 10.0), "ce", big, logs=False) == ""

    def one_maximum(logits):  # the shift taken over the whole batch: right while every row holds the batch's maximum
        return unshifted(logits - logits.max())

    apart = np.array([[1e4, 0.0], [-1e4, -9999.0]])  # row maxima 2e4 apart
    batch = shifted_logits_hint(Submission(LocalSandbox(one_maximum), "cpu", 10.0), "ce", apart)
    assert "a maximum taken over the whole batch (or per column) was subtracted, and a row whose own maximum lies 19999 below it" in batch
    assert "exp overflowed" in shifted_logits_hint(Submission(LocalSandbox(unshifted), "cpu", 10.0), "ce", apart)


def test_a_case_written_as_code_runs_with_the_learners_names_in_scope():
    from types import SimpleNamespace

    from mlprep.grading import run_code

    learner = SimpleNamespace(double=lambda x: 2 * x, _private=None)
    case = run_code("x = np.arange(3.0)\ny = double(x)", learner)
    assert case["y"].tolist() == [0.0, 2.0, 4.0] and "_private" not in case
    assert run_code("t = torch.ones(2)")["t"].sum() == 2  # torch where the code says torch


def test_an_attribute_is_copied_as_float64_numbers_or_said_what_it_is():
    from types import SimpleNamespace

    from mlprep.grading import attribute_copy

    state = torch.ones(2, dtype=torch.float32)
    obj = SimpleNamespace(running_var=state, mean_=[1, 2], label="text", nothing=None)
    copied = attribute_copy(obj, "running_var")
    state += 1  # a later call cannot change what was recorded
    assert copied.dtype == np.float64 and copied.tolist() == [1.0, 1.0]
    assert attribute_copy(obj, "mean_").tolist() == [1.0, 2.0]
    assert attribute_copy(obj, "missing") is None and attribute_copy(obj, "nothing") is None
    assert attribute_copy(obj, "label") == "str: 'text'"


def test_the_experiments_distributions_match_scipys():
    """Student's t (any real df, as Welch's test needs), chi-square and the normal, written without SciPy for
    graders: their tails and quantiles agree with scipy.stats to near float64's resolution."""
    from scipy import stats

    from mlprep.grading import chi_square_quantile, chi_square_sf, normal_quantile, normal_sf, student_t_quantile, student_t_sf

    for df in (1.0, 2.5, 7.3, 30.0, 1e4):
        for t in (-4.0, -0.3, 0.0, 1.7, 12.0):
            assert student_t_sf(t, df) == pytest.approx(stats.t.sf(t, df), rel=1e-9, abs=1e-300)
        for p in (1e-6, 0.025, 0.5, 0.975):
            assert student_t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-12)
    for df in (1, 2, 9, 99):
        for x in (0.01, 1.0, df, 5.0 * df + 20):
            assert chi_square_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-9, abs=1e-300)
        assert chi_square_quantile(1 - 1e-7, df) == pytest.approx(stats.chi2.ppf(1 - 1e-7, df), rel=1e-9)
    for z in (-8.0, -1.0, 0.0, 2.5, 30.0):
        assert normal_sf(z) == pytest.approx(stats.norm.sf(z), rel=1e-12, abs=1e-300)
    assert normal_quantile(0.975) == pytest.approx(stats.norm.ppf(0.975), rel=1e-12)


def test_a_rate_over_simulated_runs_is_judged_against_an_exact_binomial_band():
    from scipy import stats

    from mlprep.grading import binomial_band, expect_rate

    half = 1e-8 / 2
    lo, hi = binomial_band(3000, 0.05, error_rate=2 * half)
    assert stats.binom.cdf(lo - 1, 3000, 0.05) <= half and stats.binom.sf(hi, 3000, 0.05) <= half
    assert stats.binom.cdf(lo, 3000, 0.05) > half and stats.binom.sf(hi - 1, 3000, 0.05) > half  # the narrowest such band
    lo, hi = binomial_band(3000, 0.05)  # at the default error rate (1e-7): what expect_rate judges by
    expect_rate(150, 3000, 0.05, what="false positives", scenario="A/A")
    with pytest.raises(CheckFailed) as info:
        expect_rate(hi + 1, 3000, 0.05, what="false positives", scenario="A/A")
    assert "false positives" in info.value.message


def test_a_reference_run_in_its_sandbox_is_kept_by_its_arguments_and_handed_out_as_a_copy(tmp_path) -> None:
    """run_reference_sandboxed runs a scenario once per reference and arguments in a judge process (the
    self-check judges many files against one reference); arrays that print alike are other arguments."""
    import types

    from mlprep.grading import Context

    runs = []

    class ReferenceSandbox:
        def run(self, scenario, *args, **kwargs):
            runs.append(args)
            return {"total": [float(np.sum(args[0]))]}

    def scenario(module, x):
        return module

    reference = types.ModuleType("reference_kept")
    reference.__file__ = str(tmp_path / "reference.py")
    (tmp_path / "reference.py").write_text("")
    check = lambda: Context("cpu", reference, ReferenceSandbox)  # noqa: E731 - a context per check, as the engine makes them
    first = check().run_reference_sandboxed(scenario, np.arange(3.0))
    first["total"].append("changed by the judge")
    assert check().run_reference_sandboxed(scenario, np.arange(3.0)) == {"total": [3.0]} and len(runs) == 1
    a, b = np.zeros(2000), np.zeros(2000)
    b[1000] = 1.0  # the same repr as a: "array([0., 0., 0., ..., 0., 0., 0.])"
    assert repr(a) == repr(b)
    assert [check().run_reference_sandboxed(scenario, x)["total"] for x in (a, b)] == [[0.0], [1.0]] and len(runs) == 3


def test_a_memory_growth_measures_the_reference_once_per_judge_process_and_the_learner_every_time(tmp_path) -> None:
    """The reference's peak memory does not move with the machine's load: the self-check judges many files
    against one reference, so growth_check(measure="memory") measures the reference once per reference, scenario
    and sizes, and the learner's code on every call."""
    import types

    from mlprep.grading import CheckFailed, Context, growth_check

    runs = []

    class Sandbox:
        """A sandbox whose scenario returns a peak of `bytes_per_row(n)` times n rows."""

        def __init__(self, who, bytes_per_row):
            self.who, self.bytes_per_row, self.device = who, bytes_per_row, "cpu"

        def _run(self, scenario, args, kwargs, cutoff_s=None, timed=False, cpu_cutoff_s=None):
            runs.append((self.who, args[0]))
            return self.bytes_per_row(args[0]) * args[0]

        def remaining_s(self):
            return 60.0

    def peak_rows(module, n):
        return n

    reference = types.ModuleType("reference_peaks")
    reference.__file__ = str(tmp_path / "reference.py")
    (tmp_path / "reference.py").write_text("")

    def judge(learner_bytes_per_row):
        ctx = Context("cpu", reference, lambda: Sandbox("reference", lambda n: 10_000))  # 10 MB at 1,000 rows
        return growth_check(Sandbox("learner", learner_bytes_per_row), ctx, peak_rows, (1000,), (4000,), sizes=(1000, 4000), measure="memory",
                            max_growth=2, what="rows(n)")

    assert judge(lambda n: 10_000).learner_growth == 4.0
    assert [who for who, _ in runs].count("reference") == 3  # twice at the small size, once at the large
    del runs[:]
    with pytest.raises(CheckFailed) as failed:
        judge(lambda n: 10 * n)  # quadratic: 16x against the reference's 4x, measured in the first judge
    assert "your code's peak memory grew 16x" in failed.value.message and "the reference's grew 4x" in failed.value.message
    assert {who for who, _ in runs} == {"learner"}
    del runs[:]
    judge(lambda n: 10_000)
    assert {who for who, _ in runs} == {"learner"}
    (tmp_path / "reference.py").write_text("# changed\n")  # another reference file: measured again
    judge(lambda n: 10_000)
    assert [who for who, _ in runs].count("reference") == 3


def test_a_check_that_is_one_table_judges_every_case_in_order_with_checks_options() -> None:
    from mlprep.grading import check_each

    judged = []
    listed = check_each("adds", [(1, 2), (3, 4)], lambda sub, a, b: judged.append((sub, a + b)), edge="Integers add exactly.")
    made = check_each("adds drawn cases", lambda ctx: [(ctx, 10)], lambda sub, a, b: judged.append((sub, a + b)), uses=("add",))
    listed.__mlprep_check__.fn("sub", "ctx")
    made.__mlprep_check__.fn("sub", 5)
    assert judged == [("sub", 3), ("sub", 7), ("sub", 15)]
    assert (listed.__mlprep_check__.name, listed.__mlprep_check__.edge, made.__mlprep_check__.uses) == ("adds", "Integers add exactly.", ("add",))
