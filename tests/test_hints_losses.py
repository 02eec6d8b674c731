"""The loss graders' hints follow the evidence (issue 25, item 9): each hint that names a cause is shown where the
observed values show that cause, and not where another cause gives a failure that looks alike. Each pair below is a
submission that has the cause and one that fails the same check for another reason. Also: every edge a check of
these graders names is a sentence of its prompt (item 10)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.grading._files import load_module
from mlprep.grading.engine import grade_files

REPO = Path(__file__).resolve().parents[1]
# How many checks of each grader judge an edge the contract settles (focal-loss and kl-divergence have none: their checks
# judge the loss itself; kl's shape check mixes the settled 1-D case with the per-row result, which is the algorithm).
EDGE_CHECKS = {"focal-loss": 0, "masked-ce": 3, "softmax-regression": 1, "kl-divergence": 0, "esmm": 1, "logistic-regression": 2}

ESMM = """import torch
import torch.nn.functional as F


def esmm_loss(a, b, click, buy):
{body}
    log_ctcvr = F.logsigmoid(a) + F.logsigmoid(b)
    log_not_ctcvr = torch.logaddexp(F.logsigmoid(-a), F.logsigmoid(a) + F.logsigmoid(-b))
    z = click * buy
    return ctr + (-(z * log_ctcvr + (1 - z) * log_not_ctcvr)).mean()
"""

SIGMOID = """import numpy as np


def sigmoid(z):
{body}


def train(X, y, lr=0.1, steps=1000):
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    w, b = np.zeros(X.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(X @ w + b, -500, 500)))
        w = w - lr * X.T @ (p - y) / len(y)
        b = b - lr * float(np.mean(p - y))
    return w, b
"""
STABLE = """    z = np.asarray(z)
    out = np.empty(z.shape, dtype=np.result_type(z.dtype, np.float32) if z.dtype.kind == "f" else np.float64)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos].astype(out.dtype)))
    ez = np.exp(z[~pos].astype(out.dtype))
    out[~pos] = ez / (1.0 + ez)"""

SUBMISSIONS = {
    # esmm: a non-finite loss at +-50, from the CTCVR term computed from the product, or from the CTR term computed from sigmoid(a)
    "esmm product": ("esmm", "bug:log_of_product"),
    "esmm ctr from probability": ("esmm", ESMM.format(body="    p = torch.sigmoid(a)\n    ctr = -(click * torch.log(p) + (1 - click) * torch.log(1 - p)).mean()")),
    # esmm: the loss is right but d/d(ctr_logit) is not: pCTR detached inside the product, or the gradient merely scaled
    "esmm detached": ("esmm", "bug:ctr_detached_in_product"),
    "esmm scaled gradient": ("esmm", ESMM.format(body="    a = a + 0.5 * (a - a.detach())  # the same value, 1.5 times its gradient\n"
                                                       "    ctr = -(click * F.logsigmoid(a) + (1 - click) * F.logsigmoid(-a)).mean()")),
    # logistic-regression: a float16 sigmoid that loses small values in float16 arithmetic (1 - s), or one wrong in every dtype
    "sigmoid one minus in float16": ("logistic-regression", SIGMOID.format(body="    z = np.asarray(z)\n    dtype = z.dtype if z.dtype.kind == 'f' else np.float64\n"
                                                                           "    s = 1 / (1 + np.exp(-np.abs(z).astype(dtype)))\n    return np.where(z >= 0, s, 1 - s)")),
    "sigmoid floored": ("logistic-regression", SIGMOID.format(body=STABLE + "\n    return np.maximum(out, out.dtype.type(1e-3))")),
    # logistic-regression: a warning under np.errstate: exp(-z) overflowing at z = -1000, or a division by an exp that underflowed
    "sigmoid naive": ("logistic-regression", "bug:naive_sigmoid"),
    "sigmoid divides by an underflow": ("logistic-regression", SIGMOID.format(body=STABLE + "\n    neg = z < 0\n    out[neg] = 1 / (1 + 1 / np.exp(z[neg]))"
                                                                                       "\n    return out")),
    # logistic-regression: a wrong but finite value at +-1000 without a warning: no overflow to blame
    "sigmoid flat tails": ("logistic-regression", SIGMOID.format(body=STABLE + "\n    out[np.abs(z) >= 1000] = 0.5\n    return out")),
    # logistic-regression: an integer result, of z's own dtype or of a float z
    "sigmoid integer buffer": ("logistic-regression", "bug:integer_output_buffer"),
    "sigmoid rounds to int": ("logistic-regression", SIGMOID.format(body=STABLE + "\n    return np.rint(out).astype(np.int64)")),
    # kl-divergence: a wrong row of a batch that is right alone (one maximum for the batch), or wrong alone too (a detour through probabilities)
    "kl global max": ("kl-divergence", "bug:global_max_subtraction"),
    "kl probabilities": ("kl-divergence", "bug:logits_via_probabilities"),
    # softmax-regression: a non-finite loss at large logits: one maximum for the batch, or no maximum at all
    "softmax global max": ("softmax-regression", "bug:global_max_subtraction"),
    "softmax no max": ("softmax-regression", "bug:no_max_subtraction"),
    # softmax-regression: separable data not fitted: the loss rose (uphill steps), or it did not move (W never stepped; balanced classes)
    "softmax uphill": ("softmax-regression", "bug:grad_sign"),
    "softmax stuck": ("softmax-regression", "edit:W -= lr * X.T @ g|W -= 0.0 * X.T @ g"),
    # focal-loss: a float64 loss off by about float32 rounding: computed in float32 and cast back, or a formula off by 5e-7
    "focal float32 cast back": ("focal-loss", "bug:float32_cast_back"),
    "focal slightly off": ("focal-loss", "edit:return (alpha_t * modulator * ce).mean()|return (alpha_t * modulator * ce).mean() * (1 + 5e-7)"),
    # masked-ce: the same pair for a loss with temperature
    "masked global max": ("masked-ce", "bug:global_max_subtraction"),
    "masked no max": ("masked-ce", "bug:no_max_subtraction"),
}


@pytest.fixture(scope="module")
def grades(tmp_path_factory: pytest.TempPathFactory) -> dict:
    bank = load_bank(REPO)
    folder = tmp_path_factory.mktemp("hint-submissions")
    jobs = []
    for label, (exercise_id, source) in SUBMISSIONS.items():
        exercise = bank.get(exercise_id)
        if source.startswith("bug:"):
            bug = next(b for b in exercise.bugs() if b.name == source.removeprefix("bug:"))
            source = bug.apply(exercise.reference_path.read_text())
        elif source.startswith("edit:"):  # old|new|old|new... on the reference
            parts, source = source.removeprefix("edit:").split("|"), exercise.reference_path.read_text()
            for old, new in zip(parts[::2], parts[1::2]):
                assert old in source, old
                source = source.replace(old, new)
        path = folder / f"{label.replace(' ', '_')}.py"
        path.write_text(source)
        jobs.append((exercise, path))
    results = grade_files(jobs, device="cpu", jobs=2)
    return {label: {c.name: c for c in result.checks} for label, result in zip(SUBMISSIONS, results)}


def message(grades: dict, label: str, check: str) -> str:
    found = grades[label][check]
    assert found.status in ("fail", "error"), (label, check, found.status, found.message)
    return " ".join(found.message.split())


def test_esmm_names_the_term_that_breaks_only_where_that_term_alone_breaks(grades):
    check = "logits of +-50: finite, correct loss and gradients"
    product = message(grades, "esmm product", check)
    assert "sigmoid(a) * sigmoid(b) rounds to exactly 1, so log(1 - pCTCVR) of that product is log(0)" in product
    ctr = message(grades, "esmm ctr from probability", check)
    assert "log(1 - pCTCVR)" not in ctr and "sigmoid(a) rounds to exactly 1, so log(1 - pCTR) is log(0) = -inf" in ctr
    assert "log(1 - pCTR)" not in product


def test_esmm_names_the_detached_pctr_only_when_the_gradient_is_that_one(grades):
    check = "gradients with respect to ctr_logit and cvr_logit match in float64"
    assert "exactly the one the CTR term alone gives, as if pCTR were detached" in message(grades, "esmm detached", check)
    scaled = message(grades, "esmm scaled gradient", check)
    assert "as if pCTR were detached" not in scaled and "what autograd differentiates is not your value" in scaled


def test_the_float16_hint_needs_the_same_values_right_in_float32(grades):
    check = "sigmoid of float32, float16 and integer arrays: floats, at the input's precision"
    assert "The same values as float32 come back right, so it is float16 arithmetic" in message(grades, "sigmoid one minus in float16", check)
    assert "float16 arithmetic" not in message(grades, "sigmoid floored", check)


def test_a_warning_is_blamed_on_an_overflowing_exp_only_when_it_is_an_overflow(grades):
    check = "sigmoid(±1000) is exactly 1.0 and 0.0, with no overflow, divide or invalid warning"
    assert "z holds only large negative values here, so exp(-z) overflowed" in message(grades, "sigmoid naive", check)
    divided = message(grades, "sigmoid divides by an underflow", check)
    assert "divide by zero" in divided and "overflowed" not in divided and "compute exp only of numbers <= 0" in divided


def test_a_wrong_tail_without_a_warning_is_not_blamed_on_exp(grades):
    tails = message(grades, "sigmoid flat tails", "sigmoid(±1000) is exactly 1.0 and 0.0, with no overflow, divide or invalid warning")
    assert "got 0.5" in tails and "compute exp only of numbers <= 0" not in tails


def test_an_integer_result_is_said_to_keep_zs_dtype_only_when_it_does(grades):
    check = "sigmoid of float32, float16 and integer arrays: floats, at the input's precision"
    assert "It has z's integer dtype" in message(grades, "sigmoid integer buffer", check)
    rounded = message(grades, "sigmoid rounds to int", "sigmoid matches the logistic function on float64 arrays of any shape")
    assert "expected floats, got an array of dtype int64" in rounded and "z's integer dtype" not in rounded


def test_a_row_right_alone_is_blamed_on_mixing_the_rows_not_on_probabilities(grades):
    check = "kl_from_logits: finite and right at logits of 1e4"
    mixed = message(grades, "kl global max", check)
    assert "Row 0 alone, as a (1, K) batch, comes back right, so your code mixes the rows of a batch" in mixed and "probabilities" not in mixed
    detour = message(grades, "kl probabilities", check)
    assert "softmax(b) rounded to 0 where it underflows" in detour and "mixes the rows" not in detour


def test_one_maximum_for_the_batch_is_named_only_when_rows_sharing_it_come_back_right(grades):
    for prefix, check in (("softmax", "softmax_ce: confident mistakes at logits up to 1e4 (finite, exact loss and grad)"),
                          ("masked", "logits of 1e4 give finite, correct losses (float64 and float32)")):
        batch = message(grades, f"{prefix} global max", check)
        assert "a maximum taken over the whole batch (or per column) was subtracted" in batch and "exp overflowed" not in batch
        overflow = message(grades, f"{prefix} no max", check)
        assert "exp overflowed" in overflow and "whole batch" not in overflow


def test_float32_rounding_is_named_only_when_the_same_values_in_float32_give_that_result(grades):
    check = "matches the torchvision focal loss in float64"
    assert "the size of float32 rounding (2^-24, about 6e-8, per operation), and it is what your code gives for the same values in float32" in message(
        grades, "focal float32 cast back", check)
    slightly = message(grades, "focal slightly off", check)
    assert "max rel error 5e-07" in slightly and "float32" not in slightly


def test_uphill_steps_are_named_only_when_the_loss_rose(grades):
    check = "train fits separable data (every training point classified right)"
    assert "it rose from 1.099: step against the gradient" in message(grades, "softmax uphill", check)
    assert "step against the gradient" not in message(grades, "softmax stuck", check)


def edges(exercise_id: str) -> list[tuple[str, str]]:
    grader = load_module(f"edges_{exercise_id.replace('-', '_')}", REPO / "graders" / f"{exercise_id}.py")
    specs = [fn.__mlprep_check__ for _, fn in inspect.getmembers(grader, inspect.isfunction) if hasattr(fn, "__mlprep_check__")]
    return [(spec.name, spec.edge) for spec in specs if spec.edge]


def words(text: str) -> str:
    """Text as the reader takes it in: no Markdown emphasis or code marks, one space between words."""
    return " ".join(text.replace("**", "").replace("`", "").split())


@pytest.mark.parametrize("exercise_id", sorted(path.stem for path in (REPO / "graders").glob("*.py")))
def test_every_edge_a_check_names_is_a_sentence_of_its_prompt(exercise_id: str) -> None:
    """Every grader's edges (the loss graders' counted too: which of their checks are edges was decided here)."""
    prompt = words((REPO / "exercises" / exercise_id / "prompt.md").read_text())
    found = edges(exercise_id)
    for name, edge in found:
        # The quote may leave words out ("..." or "(...)"): each part is the prompt's, in order.
        parts = [words(part).rstrip(".:;,") for part in re.split(r"\s*\(\.\.\.\)\s*|\s*\.\.\.\s*", edge) if part.strip()]
        assert re.search(".*".join(map(re.escape, parts)), prompt), (name, edge)
    if exercise_id in EDGE_CHECKS:
        assert len(found) == EDGE_CHECKS[exercise_id], found
