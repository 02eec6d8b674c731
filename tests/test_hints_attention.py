"""Hints of the attention family's graders and deep-sets follow the evidence (issue 25, item 9): each hint that used to
name a cause on any failure is shown only when the observed values (or a control call) show that cause. The learner's
code runs here, in-process, through a stand-in for the sandbox; the last test grades a well-known LoRA layer whose only
fault is an edge the contract settles (item 10)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from mlprep.grading import CheckFailed, attention, reported_message
from mlprep.grading._files import load_module

REPO = Path(__file__).resolve().parents[1]


def grader(exercise_id):
    return load_module(f"hints_grader_{exercise_id.replace('-', '_')}", REPO / "graders" / f"{exercise_id}.py")


class InProcess:
    """A stand-in for the sandbox: the learner's code (a namespace of functions or classes) runs here."""

    device = "cpu"

    def __init__(self, **code):
        self.module = SimpleNamespace(**code)
        self.last_request, self.last_mutated = None, []

    def call(self, fn, *args, **kwargs):
        return getattr(self.module, fn)(*args, **kwargs)

    def run(self, scenario, *args, **kwargs):
        return scenario(self.module, *args, **kwargs)

    def control(self, fn, *args, **kwargs):
        return self.run(fn, *args, **kwargs) if callable(fn) else self.call(fn, *args, **kwargs)


CONTEXT = SimpleNamespace(device="cpu", rng=np.random.default_rng)


def failure_of(check, sub):
    """The message a check reports for the learner's code in `sub` (its deferred hint included)."""
    with pytest.raises(CheckFailed) as info:
        check(sub, CONTEXT)
    return reported_message(info.value)


def allowed_mask(keep, T):
    return torch.ones(T, T, dtype=torch.bool).tril()[None, None] & keep[:, None, None, :]


# -- causal-mask -----------------------------------------------------------------------------------

def test_query_0_returning_zeros_blames_the_diagonal_only_when_later_queries_see_keys():
    cm = grader("causal-mask")
    q, k, v = attention.tensors([[[[1.0], [2.0]]]], [[[[1.0], [-1.0]]]], [[[[0.5], [-1.5]]]])
    keep = cm._keep([True, True])
    no_diagonal = attention.attend(q, k, v, allowed_mask(keep, 2).tril(-1)).nan_to_num(0.0)
    assert "keep the diagonal" in cm._query0_hint(InProcess(), no_diagonal, q, k, v, keep)
    assert cm._query0_hint(InProcess(), torch.zeros_like(q), q, k, v, keep) == ""  # every query returns zeros: nothing points at the diagonal


def test_query_0_spread_over_later_keys_is_told_from_weights_that_do_not_sum_to_1():
    cm = grader("causal-mask")
    q, k, v = attention.tensors([[[[1.0], [2.0], [-1.0]]]], [[[[1.0], [-1.0], [0.5]]]], [[[[0.5], [-1.5], [2.0]]]])
    keep = cm._keep([True, True, True])

    def half_scores_no_mask(q, k, v, keep):  # later keys get weight (and no known mistake's scale)
        return attention.attend(q, k, v, scale=0.5).to(q.dtype)

    def nine_tenths(q, k, v, keep):  # weight on the visible keys only, summing to 0.9
        return 0.9 * attention.attend(q, k, v, allowed_mask(keep, q.shape[-2])).to(q.dtype)

    spread = cm._query0_hint(InProcess(causal_attention=half_scores_no_mask), half_scores_no_mask(q, k, v, keep), q, k, v, keep)
    short = cm._query0_hint(InProcess(causal_attention=nine_tenths), nine_tenths(q, k, v, keep), q, k, v, keep)
    assert "gives later keys weight" in spread and "not 1" not in spread
    assert "takes no weight from them" in short and "gives later keys weight" not in short


def test_a_loss_cut_off_from_autograd_blames_the_0_0_only_when_there_is_no_target():
    cm = grader("causal-mask")
    seen = {"backward_error": "element 0 of tensors does not require grad and does not have a grad_fn"}
    for no_targets in (True, False):
        with pytest.raises(CheckFailed) as info:
            cm._backward_worked(seen, "a scenario", no_targets=no_targets)
        assert ("the 0.0 included" in info.value.message) is no_targets
        assert ("compute it from the model's logits" in info.value.message) is not no_targets


def test_real_queries_moved_by_pads_are_told_weight_from_normalisation():
    cm = grader("causal-mask")
    q, k, v = attention.tensors([[[[1.0], [2.0], [-1.0], [0.5]]]], [[[[1.0], [-0.5], [1.5], [2.0]]]], [[[[0.5], [-1.5], [2.5], [1.0]]]])
    keep = cm._keep([False, True, False, True])
    pads_v = torch.where(~keep[:, None, :, None], torch.full_like(v, -1e6), v)

    def soft_pads(q, k, v, keep):  # pads penalised by 1 instead of -inf: they keep some weight
        scores = (q @ k.transpose(-2, -1)) - 1.0 * ~keep[:, None, None, :]
        scores = scores.masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(), float("-inf"))
        return scores.softmax(-1) @ v

    def pads_zeroed_after(q, k, v, keep):  # causal mask before the softmax, pads' weights zeroed after it
        scores = (q @ k.transpose(-2, -1)).masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(), float("-inf"))
        return scores.softmax(-1).masked_fill(~keep[:, None, None, :], 0.0) @ v

    weight = cm._padding_hint(InProcess(causal_attention=soft_pads), cm.PAD_PARTS[0], q, k, v, keep, pads_v)
    norm = cm._padding_hint(InProcess(causal_attention=pads_zeroed_after), cm.PAD_PARTS[0], q, k, v, keep, pads_v)
    assert "pad keys still get weight" in weight and "normalisation" not in weight
    assert "pad keys get no weight, yet their scores still enter the softmax's normalisation" in norm and "still get weight" not in norm


# -- gqa-attention ---------------------------------------------------------------------------------

def test_gqa_causality_blames_weight_on_later_keys_only_when_v_alone_moves_the_earlier_outputs():
    gqa = grader("gqa-attention")

    def grouped(q, k, v):
        return k.repeat_interleave(q.shape[1] // k.shape[1], dim=1), v.repeat_interleave(q.shape[1] // k.shape[1], dim=1)

    def unmasked(q, k, v, causal=False):
        k, v = grouped(q, k, v)
        return attention.attend(q, k, v).to(q.dtype)

    def masked_after_softmax(q, k, v, causal=False):
        k, v = grouped(q, k, v)
        T = q.shape[-2]
        return attention.attend(q, k, v, torch.ones(T, T, dtype=torch.bool).tril(), after_softmax=True).to(q.dtype)

    weight = failure_of(gqa.causality_probe_check, InProcess(gqa=unmasked))
    norm = failure_of(gqa.causality_probe_check, InProcess(gqa=masked_after_softmax))
    assert "later keys get weight" in weight and "normalisation" not in weight
    assert "later keys get no weight, yet their scores still enter" in norm and "get weight from earlier queries" not in norm


def test_gqa_wrong_exception_hint_follows_what_was_raised():
    gqa = grader("gqa-attention")

    class HeadsError(Exception):
        pass

    def raising(exception):
        def fn(q, k, v, causal=False):
            raise exception("bad heads")
        return fn

    def grouped_by_floor(q, k, v, causal=False):  # no check: Hq // Hkv rounds down and the shapes clash
        return q @ k.repeat_interleave(q.shape[1] // k.shape[1], dim=1).transpose(-2, -1)

    asserted = failure_of(gqa.indivisible_heads, InProcess(gqa=raising(AssertionError)))
    clashed = failure_of(gqa.indivisible_heads, InProcess(gqa=grouped_by_floor))
    other = failure_of(gqa.indivisible_heads, InProcess(gqa=raising(HeadsError)))
    assert "an assert" in asserted and "rounds down" not in asserted
    assert "rounds down" in clashed
    assert "raises another type" in other and "rounds down" not in other and "an assert" not in other


# -- deep-sets -------------------------------------------------------------------------------------

class MeanOverN(nn.Module):
    """Pads and missing values zeroed before phi, with flags, but the sum divided by N: the pads' number counts."""

    def __init__(self, d, h, n_cls):
        super().__init__()
        self.phi, self.head = nn.Sequential(nn.Linear(2 * d, h), nn.Tanh()), nn.Linear(h, n_cls)

    def encode(self, x, keep):
        real = keep[..., None]
        missing = torch.isnan(x) & real
        z = self.phi(torch.cat([torch.where(real & ~missing, x, 0.0), missing.to(x.dtype)], dim=-1))
        return torch.where(real, z, 0.0)

    def forward(self, x, keep):
        return self.head(self.encode(x, keep).sum(dim=1) / x.shape[1])


class PadsThroughPhi(MeanOverN):
    """The real points' count is right, but the pads go through phi as they are and are zeroed by a product afterwards."""

    def forward(self, x, keep):
        missing = torch.isnan(x) & keep[..., None]
        z = self.phi(torch.cat([torch.where(missing, 0.0, x), missing.to(x.dtype)], dim=-1)) * keep[..., None]
        return self.head(z.sum(dim=1) / keep.sum(dim=1, keepdim=True).clamp(min=1))


class EmptyIsZeroOverZero(MeanOverN):
    """Everything right but the count: an all-padded set divides 0 by 0."""

    def forward(self, x, keep):
        return self.head(self.encode(x, keep).sum(dim=1) / keep.sum(dim=1, keepdim=True))


def test_extra_pads_blame_the_count_or_the_pads_values_as_a_control_shows():
    ds = grader("deep-sets")
    padded, keep = ds._t([[ds.P0, ds.P2, ds.PAD_NAN]]), ds._k([True, True, False])
    count = ds._extra_pads_hint(InProcess(SetClassifier=MeanOverN), ds._spec(3), padded, keep)
    values = ds._extra_pads_hint(InProcess(SetClassifier=PadsThroughPhi), ds._spec(3), padded, keep)
    assert "the pads' number moves them" in count and "values reach" not in count
    assert "the pads' values reach them" in values and "not by N" not in values


def test_an_empty_set_blames_0_over_0_only_when_zero_pads_still_break_it():
    ds = grader("deep-sets")
    x, keep = ds._t([[ds.PAD_NAN, ds.PAD_BIG, [0.5, 0.0, -2.0]], [ds.P0, ds.P2, ds.PAD_NAN]]), ds._k([False, False, False], [True, True, False])
    empty = ds._empty_set_hint(InProcess(SetClassifier=EmptyIsZeroOverZero), x, keep)
    leaking = ds._empty_set_hint(InProcess(SetClassifier=PadsThroughPhi), x, keep)
    assert "0/0" in empty and "reach them" not in empty
    assert "the pads' own values (NaN, 1e30) reach them" in leaking and "0/0" not in leaking


# -- lora ------------------------------------------------------------------------------------------

class Adapted(nn.Module):
    """A correct LoRALinear but for what `freeze` and `forward_writes` say."""

    freeze, forward_writes = True, False

    def __init__(self, base, r, alpha):
        super().__init__()
        self.base, self.scaling = base, alpha / r
        for p in base.parameters():
            p.requires_grad_(not self.freeze)
        self.A = nn.Parameter(torch.randn(r, base.in_features, dtype=base.weight.dtype))
        self.B = nn.Parameter(torch.zeros(base.out_features, r, dtype=base.weight.dtype))

    def forward(self, x):
        if self.forward_writes:
            with torch.no_grad():
                self.base.weight.mul_(1.0 + 1e-3)  # "running statistics" kept in the base's weight
        return self.base(x) + self.scaling * (x @ self.A.T) @ self.B.T


def test_a_moved_base_blames_requires_grad_only_when_the_base_still_requires_it():
    lo = grader("lora")
    case = lo._case(**lo.TINY)
    trainable = type("Trainable", (Adapted,), {"freeze": False})
    writes = type("Writes", (Adapted,), {"forward_writes": True})
    grad = lo._base_moved_hint(InProcess(LoRALinear=trainable), case, "weight")
    written = lo._base_moved_hint(InProcess(LoRALinear=writes), case, "weight")
    assert "it still requires grad" in grad and "in place" not in grad
    assert "writes into it in place" in written and "still requires grad" not in written


LORALIB_STYLE = '''
import math

import torch
from torch import nn


class LoRALinear(nn.Module):
    """loralib's Linear (microsoft/LoRA) wrapped to the interface: its adapters are lora_A and lora_B."""

    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad = False
        if self.base.bias is not None:
            self.base.bias.requires_grad = False
        self.lora_A = nn.Parameter(base.weight.new_zeros((r, base.in_features)))
        self.lora_B = nn.Parameter(base.weight.new_zeros((base.out_features, r)))
        self.scaling = alpha / r
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B)

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling

    def merge(self):
        merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None,
                           dtype=self.base.weight.dtype, device=self.base.weight.device)
        with torch.no_grad():
            merged.weight.copy_(self.base.weight + (self.lora_B @ self.lora_A) * self.scaling)
            if self.base.bias is not None:
                merged.bias.copy_(self.base.bias)
        return merged
'''


def test_a_well_known_lora_layer_with_other_names_fails_only_the_naming_edge(tmp_path):
    from mlprep.bank import load_bank
    from mlprep.grading.engine import grade_file

    path = tmp_path / "loralib_style.py"
    path.write_text(LORALIB_STYLE)
    result = grade_file(load_bank(REPO).get("lora"), path, device="cpu")
    failed = [c for c in result.checks if c.status != "pass" and c.status != "skip"]
    assert [c.name for c in failed] == ["the adapters are nn.Parameters named A and B"], result.message
    assert result.message.startswith("the algorithm is right: its checks pass; 1 of the 1 edge cases of the contract fail")
    assert "is lora.lora_A" in failed[0].message and "(An edge case the contract settles: The adapters are two nn.Parameter" in failed[0].message
    assert math.isfinite(result.duration_s)
