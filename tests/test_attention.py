"""The attention family's shared parts (mlprep.grading.attention): what a known mistake gives, when an output is that
mistake's, the float32-error hint, and the control that tells the causality probe's two causes apart."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import attention


class InProcess:
    """A stand-in for the sandbox: the learner's functions run here, control calls included."""

    def __init__(self, **functions):
        self.module = SimpleNamespace(**functions)

    def control(self, fn, *args, **kwargs):
        return fn(self.module, *args, **kwargs) if callable(fn) else getattr(self.module, fn)(*args, **kwargs)


def qkv(seed=0, shape=(1, 1, 4, 2)):
    return attention.normal(np.random.default_rng(seed), shape, shape, shape)


def test_attend_is_sdpa_with_a_mask_and_undefined_where_nothing_is_allowed():
    q, k, v = qkv()
    tril = torch.ones(4, 4, dtype=torch.bool).tril()
    assert torch.allclose(attention.attend(q, k, v, tril), F.scaled_dot_product_attention(q, k, v, is_causal=True))
    strict = attention.attend(q, k, v, tril.tril(-1))
    assert strict[:, :, 0].isnan().all() and strict[:, :, 1:].isfinite().all()  # query 0 sees nothing: undefined there
    assert torch.allclose(attention.attend(q, k, v), F.scaled_dot_product_attention(q, k, v))


def test_a_known_mistake_is_named_where_its_output_is_defined_and_only_when_it_is_not_the_right_answer():
    q, k, v = qkv(1)
    tril = torch.ones(4, 4, dtype=torch.bool).tril()
    want = attention.attend(q, k, v, tril)
    strict = attention.attend(q, k, v, tril.tril(-1))
    mistakes = [("no diagonal.", lambda: strict), ("no scale.", lambda: attention.attend(q, k, v, tril, scale=1.0)), ("right.", lambda: want)]
    got = strict.nan_to_num(0.0)  # zeros where the mistake is undefined still count as that mistake
    assert attention.known_mistake(got, mistakes, want, rtol=1e-7, atol=1e-7) == "no diagonal."
    assert attention.known_mistake(want, mistakes, want, rtol=1e-7, atol=1e-7) == ""  # the right answer is no mistake's evidence
    assert attention.known_mistake(got + 1.0, mistakes, want, rtol=1e-7, atol=1e-7) == ""
    twice = [("a.", lambda: strict), ("b.", lambda: strict.clone())]
    assert attention.known_mistake(got, twice, want, rtol=1e-7, atol=1e-7) == "a. Equally possible on this input: b."
    assert attention.known_mistake(got[..., :1], mistakes, want, rtol=1e-7, atol=1e-7) == ""  # another shape: no evidence, no error


def test_the_float32_hint_needs_an_error_of_float32_size_on_float64_inputs():
    q, k, v = qkv(2)
    q = 300 * q  # large scores: a float32 softmax moves the weights visibly
    want = attention.attend(q, k, v)
    in_float32 = attention.attend(q, k, v, float32_softmax=True)
    assert "the size of error a float32 softmax gives" in attention.float32_hint(in_float32, want, lambda: in_float32, torch.float64)
    assert attention.float32_hint(want, want, lambda: in_float32, torch.float64) == ""
    assert attention.float32_hint(want + 1.0, want, lambda: in_float32, torch.float64) == ""
    assert attention.float32_hint(in_float32, want, lambda: in_float32, torch.float32) == ""


def test_the_causality_control_tells_weight_on_later_keys_from_later_scores_in_the_normalisation():
    q, k, v = qkv(3)
    later_v = v.clone()
    later_v[:, :, 2:] -= 5.0  # positions 2.. changed: the outputs at 0 and 1 are graded
    tril = torch.ones(4, 4, dtype=torch.bool).tril()

    def unmasked(q, k, v):  # later keys get weight
        return attention.attend(q, k, v).float()

    def masked_after_softmax(q, k, v):  # later keys get no weight, but their scores enter the normalisation
        return attention.attend(q, k, v, tril, after_softmax=True).float()

    def moved(fn):
        return attention.v_alone_hint(InProcess(attend=fn), "attend", (q, k, v), (q, k, later_v), lambda out: out[:, :, :2], moved="by v",
                                      still="by k")

    assert moved(unmasked) == "by v"
    assert moved(masked_after_softmax) == "by k"
    assert moved(lambda q, k, v: None) == ""  # the control gave nothing to compare: no evidence either way


def test_a_far_apart_case_breaks_a_softmax_with_one_max_for_more_than_a_row():
    q, k, v = attention.far_apart([[[1, -1, 1], [-1, -1, -1]], [[1, 1, -1], [-1, 1, 1]]])
    tril = torch.ones(3, 3, dtype=torch.bool).tril()
    right = attention.attend(q, k, v, tril)
    assert torch.allclose(right, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=0, atol=1e-12) and right.isfinite().all()
    assert attention.attend(q, k, v, tril, shift="all").isnan().any() and attention.attend(q, k, v, tril, shift="head").isnan().any()
    for dtype in (torch.float32, torch.float64):
        assert F.scaled_dot_product_attention(*attention.far_apart([[[1, -1]]], dtype=dtype), is_causal=True).isfinite().all()
