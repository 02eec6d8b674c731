"""The attention family's shared parts (causal-mask, gqa-attention, linear-attention; lora where it fits): inputs built
as these graders build them (f64, tensors, normal, small_values, keep_rows for shrinking, far_apart: scores of +-900 in
different rows), softmax attention as a known mistake computes it (attend, SHIFT_MISTAKES), a mistake's output matched
where it is defined (matches, known_mistake), the float32-error hint, the learner's output after the common rules
(attention_output), probes whose inputs, extreme ones included, are checked for in-place changes (unchanged_probe,
causality_probe), and the control call that tells weight on changed keys from their scores in the normalisation
(v_alone_hint). Torch is imported inside the functions: importing the toolkit imports no torch."""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from mlprep.grading.cases import grid, lists_of
from mlprep.grading.checks import explained
from mlprep.grading.compare import assert_keeps_precision, assert_returns_like, assert_shape, tolerance_for
from mlprep.grading.handles import Submission
from mlprep.grading.mistakes import mistake_hint, same_values
from mlprep.grading.probes import inputs_unchanged, invariance_probe

JOIN = " Equally possible on this input: "  # two known mistakes can agree on a small input: both are named


# -- inputs ---------------------------------------------------------------------------------------

def f64(*tensors: Any) -> Any:
    """Each tensor detached, on the CPU, in float64 (None stays None): one tensor gives it, several a tuple."""
    import torch

    out = tuple(None if t is None else torch.as_tensor(t).detach().cpu().double() for t in tensors)
    return out[0] if len(out) == 1 else out


def tensors(*nested: Any, dtype: Any = None) -> tuple:
    """Hand-written nested lists as tensors of `dtype` (default float64)."""
    import torch

    return tuple(torch.tensor(x, dtype=dtype or torch.float64) for x in nested)


def normal(rng: np.random.Generator, *shapes: Sequence[int], dtype: Any = None, per: int = 0) -> Any:
    """One tensor of N(0, 1) draws from `rng` per shape, in order, of `dtype` (default float64); with `per`, rounded to
    multiples of 1 / per (8: exact in every dtype, and short when a failing input is shown). One shape gives a tensor."""
    import torch

    out = []
    for shape in shapes:
        values = rng.standard_normal(shape)
        out.append(torch.from_numpy(np.round(per * values) / per + 0.0 if per else values).to(dtype or torch.float64))
    return out[0] if len(out) == 1 else tuple(out)


def small_values(*sizes: int) -> Any:
    """Hypothesis strategy for shrinking: a flat list of `size` small integers (-2..2, as floats) per size, the values
    of the tensors of a small case (exact in every dtype, short when shown)."""
    from hypothesis import strategies as st

    return st.tuples(*(lists_of(grid(-2, 2), n) for n in sizes))


def keep_rows(B: int, T: int) -> Any:
    """Hypothesis strategy: B rows of T keep flags, shrinking toward all True (every token real)."""
    from hypothesis import strategies as st

    return lists_of(lists_of(st.booleans().map(operator.not_), T), B)


# -- expectations and known mistakes, judge side -----------------------------------------------------

def attend(q: Any, k: Any, v: Any, allowed: Any = None, *, scale: float | None = None, fill: float = float("-inf"), after_softmax: bool = False,
           dim: int = -1, float32_softmax: bool = False, shift: str | None = None) -> Any:
    """softmax(q k^T * scale) v in float64 (scale 1 / sqrt(d) unless given) over the `allowed` keys (a bool mask that
    broadcasts to the scores; None: all), as a mistaken implementation may compute it: masked scores filled with
    `fill`, the masked weights zeroed after a softmax over every key (`after_softmax`), the softmax over another
    axis (`dim`), in float32, or written out as exp(scores - max) / sum with one max for the whole tensor
    (`shift="all"`) or for each head (`shift="head"`) instead of each query's own. NaN at queries with nothing
    allowed, or whose exponentials all underflow (undefined there)."""
    q, k, v = f64(q, k, v)
    scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5 if scale is None else scale)

    def softmax(scores: Any) -> Any:
        if shift is not None:
            exp = (scores - (scores.amax() if shift == "all" else scores.amax(dim=(-2, -1), keepdim=True))).exp()
            return exp / exp.sum(dim, keepdim=True)
        return scores.float().softmax(dim).double() if float32_softmax else scores.softmax(dim)

    if allowed is None:
        return softmax(scores) @ v
    weights = softmax(scores).masked_fill(~allowed, 0.0) if after_softmax else softmax(scores.masked_fill(~allowed, fill))
    return (weights @ v).masked_fill(~allowed.any(dim=-1, keepdim=True), float("nan"))


SHIFT_MISTAKES = {  # what a softmax written out with one max for more than a query's own row gives, as hints
    "all": ("Your output is what a softmax written out as exp(scores - scores.max()) / sum gives, one max for the whole tensor: a query whose"
            " scores all lie far below that max gets exp(...) = 0 for every key, 0/0. Subtract each query's own max (amax(dim=-1, keepdim=True)),"
            " or call torch.softmax."),
    "head": ("Your output is what a softmax written out with one max per head (over all its queries and keys) gives: a query whose scores all"
             " lie far below its head's max gets exp(...) = 0 for every key, 0/0. Subtract each query's own max (amax(dim=-1, keepdim=True)),"
             " or call torch.softmax."),
}


def far_apart(signs: Sequence, dtype: Any = None, kv_heads: int | None = None) -> tuple:
    """q, k, v with d = 1 whose scores q.k sit near +900 in some query rows and near -900 in others: `signs` (nested
    lists, +-1 per (b, h, t) of q) times 30; every key-value head's T keys 30, 29, 28, ... (less 1 per kv head, of
    `kv_heads`, default one per query head); v = 1, 2, 3, ... down the keys, negated in odd kv heads. A softmax must subtract each query's
    own max, as torch.softmax does: one max for the batch, a head or the whole tensor sends the rows far below it to
    0/0. Exact in float32 and float64; the weights are one-hot up to e^-30."""
    import torch

    q = 30.0 * torch.tensor(signs, dtype=torch.float64)[..., None]
    B, H, T, _ = q.shape
    n_kv = kv_heads or H
    k = torch.stack([torch.stack([30.0 - j - torch.arange(T, dtype=torch.float64) for j in range(n_kv)]) for _ in range(B)])[..., None]
    v = torch.stack([torch.stack([(-1.0) ** j * (1.0 + torch.arange(T, dtype=torch.float64)) for j in range(n_kv)]) for _ in range(B)])[..., None]
    return tuple(t.to(dtype or torch.float64) for t in (q, k, v))


def matches(got: Any, variant: Any, *, rtol: float, atol: float, where: Any = None) -> bool:
    """Whether `got` is a known mistake's output `variant` (float64 tensors of one shape): within (rtol, atol) where
    the variant is defined, 0 or NaN where it is not (a query with nothing to look at, a 0/0), over the positions in
    `where` (default: all), at least one of them defined."""
    import torch

    if got.shape != variant.shape:
        return False
    defined = variant.isfinite() if where is None else where & variant.isfinite()
    close = (got - variant).abs() <= atol + rtol * variant.abs()
    undefined_ok = (got == 0) | got.isnan()
    rest = undefined_ok if where is None else torch.where(where, undefined_ok, True)
    return bool(defined.any()) and bool(torch.where(defined, close, rest).all())


def known_mistake(got: Any, mistakes: Any, want: Any = None, *, rtol: float, atol: float, where: Any = None, apart: float = 1.0,
                  first: bool = False) -> str:
    """The hints of the known mistakes, (hint, output or a function giving it), whose output `got` `matches`, joined
    (with `first`, the first of them), or "". With `want`, a mistake whose output is within `apart` times (rtol, atol)
    of it wherever it is defined, and defined wherever it is (in `where`), is no evidence."""
    import torch

    got = f64(got)

    def is_right(variant: Any) -> bool:
        inside = torch.ones_like(want, dtype=torch.bool) if where is None else where
        differs = (variant - want).abs() > apart * (atol + rtol * want.abs())
        return not bool((inside & ((variant.isfinite() & differs) | (~variant.isfinite() & want.isfinite()))).any())

    if want is not None:
        want = f64(want)
        if got.shape != want.shape:
            return ""
    return mistake_hint(got, mistakes, say="{}", join=None if first else JOIN, first=first,
                        same=lambda value, variant: matches(value, variant, rtol=rtol, atol=atol, where=where),
                        is_right=is_right if want is not None else None)


def float32_hint(got: Any, want: Any, float32_output: Callable[[], Any], dtype: Any, *, where: Any = None, what: str = "a float32 softmax",
                 fix: str = "keep the scores and the softmax in float64") -> str:
    """For float64 inputs: the hint that `got` is off from `want` by the size of error a float32 computation makes on
    them (within 10x of what `float32_output()` is off by, over `where`), or ""."""
    import torch

    if str(dtype) != "torch.float64":
        return ""
    got, want = f64(got, want)
    mask = torch.ones_like(want, dtype=torch.bool) if where is None else where
    error = torch.where(mask, (got - want).abs(), 0.0).nan_to_num(nan=float("inf")).max().item()
    float32_error = torch.where(mask, (f64(float32_output()) - want).abs(), 0.0).max().item()
    if float32_error > 1e-9 and float32_error / 10 <= error <= 10 * float32_error:
        return (f"Your output is off by {error:.2g}, the size of error {what} gives on these float64 inputs ({float32_error:.2g}): {fix}"
                " (look for .float(), a float32 constant or dtype=torch.float32 on the way).")
    return ""


# -- calling the learner's attention ----------------------------------------------------------------

def attention_output(sub: Submission, fn: str, *args: Any, what: str, shape: Sequence[int], scenario: str, layout: str = "", **kwargs: Any) -> Any:
    """The learner's fn(*args, **kwargs) after the common rules: its inputs left unchanged, a tensor on the inputs'
    device, of `shape` (`layout` names its axes in the message), at least as precise as the first argument."""
    got = inputs_unchanged(sub, fn, *args, scenario=scenario, **kwargs)
    assert_returns_like(got, args[0], what=what, scenario=scenario, device=sub.device)
    assert_shape(got, tuple(shape), what=f"{what} {layout}".strip(), scenario=scenario)
    assert_keeps_precision(got, args[0].dtype, what=what, scenario=scenario)
    return got


# -- causality ----------------------------------------------------------------------------------------

MOVED_BY_V = ("Changing only v at position {j} moves them as well, so key {j} gets weight from earlier queries: the scores of keys after the"
              " query must become -inf before the softmax (keep the lower triangle, tril, diagonal included).")
MOVED_BY_K = ("Changing only v at position {j} leaves them unchanged, but changing k moves them: key {j} gets no weight, yet its score still"
              " enters the softmax's normalisation, as when the weights are masked after the softmax. Mask the scores with -inf before the softmax.")


def unchanged_probe(sub: Submission, fn: str, args: Sequence[Any], changed: Sequence[Any], *, scenario: str, kwargs: dict | None = None,
                    explain: Callable[[], str] | None = None, **probe: Any) -> None:
    """invariance_probe(sub, fn, args, changed, ...) (`explain`: its failure's deferred hint), then both inputs checked
    for in-place modification: the changed ones are often the extreme ones (pads of 1e6), which no other check passes
    to the learner's code."""
    with explained(explain or (lambda: "")):
        invariance_probe(sub, fn, args, changed, scenario=scenario, kwargs=kwargs, **probe)
    for inputs in (args, changed):
        inputs_unchanged(sub, fn, *inputs, scenario=scenario, **(kwargs or {}))


def causality_probe(sub: Submission, fn: str, args: Sequence[Any], changed: Sequence[Any], j: int, *, what: str, scenario: str,
                    graded: Callable[[Any], Any] | None = None, kwargs: dict | None = None, shape: Sequence[int] | None = None,
                    moved_by_v: str = MOVED_BY_V, moved_by_k: str = MOVED_BY_K) -> None:
    """The outputs before position j (`graded`, default out[:, :, :j]) must not move when the inputs q, k, v at j (and
    later) become `changed`, and neither input may be modified in place. On a failure a control call with only v
    changed says which cause the evidence shows: `moved_by_v` (the earlier outputs move with v alone: later keys get
    weight) or `moved_by_k` (they stay put: later keys only enter the normalisation); both are formatted with j."""
    import torch

    pick = graded or (lambda out: torch.as_tensor(out)[:, :, :j])
    only_v = (*args[:2], changed[2], *args[3:])
    unchanged_probe(sub, fn, args, changed, kwargs=kwargs, shape=shape, scenario=scenario, graded=pick, what=what,
                    explain=lambda: v_alone_hint(sub, fn, args, only_v, pick, moved=moved_by_v.format(j=j), still=moved_by_k.format(j=j), kwargs=kwargs))


def v_alone_hint(sub: Submission, fn: str, args: Sequence[Any], only_v: Sequence[Any], pick: Callable[[Any], Any], *, moved: str, still: str,
                 kwargs: dict | None = None) -> str:
    """Control calls for a hint: `moved` when the graded part (`pick`) of the learner's output moves as only v changes
    (args -> only_v: the changed keys get weight), `still` when it stays put (they only enter the normalisation), ""
    when the control did not run through (no evidence either way)."""
    import torch

    base, changed = sub.control(fn, *args, **(kwargs or {})), sub.control(fn, *only_v, **(kwargs or {}))
    if not (torch.is_tensor(base) and torch.is_tensor(changed)) or base.shape != changed.shape:
        return ""
    rtol, atol = tolerance_for(base.dtype)
    return still if same_values(pick(changed), pick(base), rtol=rtol, atol=atol, equal_nan=True) else moved
