"""Grader for `causal-mask`: masked scaled dot-product attention, and the next-token loss.

Attention expectations come from torch's F.scaled_dot_product_attention (in float64, on the CPU)
with the combined causal & key-padding mask, with zeros for queries that see no key. Outputs at a
pad query that does see keys are outside the contract, so they are never compared: before each
comparison they are set to 0 in both outputs (`_real_queries`). The gradient checks only use
left padding, where every position is graded (a pad query there sees no key and must be zero), so
that a contraction over the whole output is fair.

lm_loss takes a model, so it is exercised by the module-level scenario `lm_loss_scenario`, which
builds one of the tiny causal models below in the sandbox, calls the learner's lm_loss, runs
backward() and hands back observations (value, whether backward worked, parameter gradients).
"""

import torch
import torch.nn.functional as F
from torch import nn

from mlprep.grading import (
    GraderDefect,
    assert_close,
    assert_finite,
    assert_shape,
    check,
    fail,
    gradcheck_float64,
    inputs_unchanged,
    invariance_probe,
    value_and_grad,
)

# keep patterns, one row per sequence (T = 6): every scenario names the ones it uses.
ALL_REAL = [True, True, True, True, True, True]
RIGHT_PADDED = [True, True, True, True, False, False]
LEFT_PADDED = [False, False, True, True, True, True]
WITH_HOLES = [True, False, True, True, False, True]
ALL_PAD = [False, False, False, False, False, False]

MASK_HINT = ("Query t may attend to keys 0..t (diagonal included) that are real; masked scores must get zero"
             " weight after the softmax (mask with -inf before it); the scores are q.k / sqrt(d); a query that sees"
             " no key returns zeros.")


# ---------------------------------------------------------------------------------------------
# Expectations (judge side)
# ---------------------------------------------------------------------------------------------
def _qkv(rng, shape, dtype=torch.float64):
    return tuple(torch.from_numpy(rng.standard_normal(shape)).to(dtype) for _ in range(3))


def _keep(*rows):
    return torch.tensor(rows, dtype=torch.bool)


def _allowed(keep, T):
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return causal[None, None] & keep.cpu()[:, None, None, :]  # (B, 1, T, T)


def _sees_no_key(keep):
    """(B, 1, T, 1): True where query t has no real key among 0..t."""
    return ~(keep.cpu().long().cumsum(dim=1) > 0)[:, None, :, None]


def _expected(q, k, v, keep):
    """torch's SDPA in float64 with the combined mask; zeros for queries that see no key."""
    q, k, v = (t.detach().cpu().double() for t in (q, k, v))
    allowed = _allowed(keep, q.shape[-2])
    empty = _sees_no_key(keep)
    # An all-False row is not something every SDPA backend defines; give it any key, zero it after.
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | empty)
    return out.masked_fill(empty, 0.0)


def _real_queries(out, keep):
    """`out` with the positions outside the contract (pad queries that see keys) set to 0."""
    graded = keep.cpu()[:, None, :, None] | _sees_no_key(keep)
    return torch.where(graded, torch.as_tensor(out).detach().cpu(), 0.0)


def _output(sub, q, k, v, keep, scenario):
    got = inputs_unchanged(sub, "causal_attention", q, k, v, keep, scenario=scenario)
    assert_shape(got, tuple(q.shape), what="causal_attention output", scenario=scenario)
    return got


# ---------------------------------------------------------------------------------------------
# causal_attention
# ---------------------------------------------------------------------------------------------
@check("query 0 attends to itself only")
def first_query_sees_itself(sub, ctx):
    q, k, v = _qkv(ctx.rng(1), (2, 2, 5, 4))
    keep = _keep([True] * 5, [True, True, True, False, False])
    scenario = f"float64, q/k/v shape {tuple(q.shape)}, no padding before position 1"
    got = _output(sub, q, k, v, keep, scenario)
    assert_close(torch.as_tensor(got)[:, :, 0], v[:, :, 0], what="output at query 0 (must equal v at key 0)",
                 scenario=scenario, hint="Query 0 sees exactly one key, key 0, so all its weight is on it: include the"
                 " diagonal, mask the later keys before the softmax.")


@check("matches F.scaled_dot_product_attention with the combined mask", devices=("cpu", "cuda"))
def matches_sdpa(sub, ctx):
    rng = ctx.rng(2)
    cases = [
        (torch.float32, (4, 2, 6, 8), _keep(ALL_REAL, RIGHT_PADDED, LEFT_PADDED, WITH_HOLES),
         "all real, right-padded, left-padded, pads in the middle"),
        (torch.float64, (2, 3, 6, 5), _keep(WITH_HOLES, ALL_REAL), "pads in the middle, all real"),
    ]
    for dtype, shape, keep, rows in cases:
        q, k, v = _qkv(rng, shape, dtype)
        scenario = f"{str(dtype).removeprefix('torch.')}, q/k/v shape {shape}, keep rows: {rows}, {ctx.device}"
        got = _output(sub, q, k, v, keep, scenario)
        want = _expected(q, k, v, keep)
        assert_close(_real_queries(got, keep), _real_queries(want, keep), what="causal_attention output", scenario=scenario,
                     dtype=dtype, hint=MASK_HINT + " Outputs at pad queries that see real keys are not compared.")


@check("causality: keys and values at position j change no earlier output")
def causality_probe(sub, ctx):
    rng = ctx.rng(3)
    q, k, v = _qkv(rng, (2, 2, 6, 4))
    keep = _keep(ALL_REAL, RIGHT_PADDED)
    for j in (1, 3, 5):
        k2, v2 = k.clone(), v.clone()
        k2[:, :, j] += torch.from_numpy(10 * rng.standard_normal(k2[:, :, j].shape))
        v2[:, :, j] += torch.from_numpy(10 * rng.standard_normal(v2[:, :, j].shape))
        # Only real queries before j are compared (the pad queries of row 1 start at 4).
        invariance_probe(sub, "causal_attention", (q, k, v, keep), (q, k2, v2, keep), shape=tuple(q.shape),
                         graded=lambda out, j=j: _real_queries(out, keep)[:, :, :j],
                         what=f"outputs at queries 0..{j - 1}", scenario=f"float64, shape (2, 2, 6, 4), k and v at position {j} changed by up to ~30",
                         hint=f"A query before position {j} must not see key {j}: keep the lower triangle of the (query, key)"
                         " scores, diagonal included, and mask before the softmax.")


@check("padding: pad keys and values, even huge ones, change no real query")
def padding_probe(sub, ctx):
    rng = ctx.rng(4)
    q, k, v = _qkv(rng, (3, 2, 6, 4))
    keep = _keep(LEFT_PADDED, WITH_HOLES, RIGHT_PADDED)
    pads = ~keep[:, None, :, None]
    k2 = torch.where(pads, torch.from_numpy(1e6 * rng.standard_normal(k.shape)), k)
    v2 = torch.where(pads, torch.from_numpy(1e6 * rng.standard_normal(v.shape)), v)
    invariance_probe(sub, "causal_attention", (q, k, v, keep), (q, k2, v2, keep), shape=tuple(q.shape),
                     graded=lambda out: _real_queries(out, keep), what="outputs at real queries",
                     scenario=("float64, shape (3, 2, 6, 4), keep rows: left-padded, pads in the middle, right-padded;"
                               " k and v at pad positions set to values of size ~1e6"),
                     hint="A pad token must get zero weight from every query: the padding mask belongs on the KEY axis"
                     " (the last axis of the scores), and masked scores must become -inf before the softmax.")


@check("left padding and a fully padded row: zeros, no NaN, finite gradients", devices=("cpu", "cuda"))
def no_key_rows(sub, ctx):
    q, k, v = _qkv(ctx.rng(5), (3, 2, 6, 4), torch.float32)
    keep = _keep(LEFT_PADDED, ALL_PAD, ALL_REAL)
    scenario = f"float32, shape (3, 2, 6, 4), keep rows: left-padded (2 pads), all pads, all real, {ctx.device}"
    got = _output(sub, q, k, v, keep, scenario)
    want = _expected(q, k, v, keep)
    no_key_hint = ("Queries 0-1 of row 0 and every query of row 1 see no key: their output must be zeros."
                   " A softmax over a row that is all -inf is NaN; give such rows something finite to softmax"
                   " and zero them afterwards.")
    empty = _sees_no_key(keep).expand(want.shape)
    got_tensor = torch.as_tensor(got)
    assert_close(got_tensor.masked_fill(~empty, 0.0), torch.zeros(want.shape), what="output at queries that see no key",
                 scenario=scenario, hint=no_key_hint)
    assert_close(got, want, what="causal_attention output", scenario=scenario, dtype=torch.float32, hint=MASK_HINT)
    got_value, got_grads = sub.run(value_and_grad, "causal_attention", [q, k, v, keep], [0, 1, 2])
    _, want_grads = ctx.run_reference(value_and_grad, "causal_attention", [q, k, v, keep], [0, 1, 2])
    for name, got_grad, want_grad in zip("qkv", got_grads, want_grads):
        what = f"gradient w.r.t. {name}"
        if got_grad is None:
            fail(f"{what} ({scenario}): no gradient reached {name}; compute the output from it with torch operations")
        assert_finite(got_grad, what=what, scenario=scenario,
                      hint="Zeroing NaN outputs after the softmax (torch.where, nan_to_num) still lets NaN flow back"
                      " through the softmax: the rows that see no key must never be NaN in the first place.")
        assert_close(got_grad, want_grad, what=what, scenario=scenario, dtype=torch.float32)


def _float16_overflow_inputs(rng, keep, d=64, c=56.0):
    """q, k of +-c entries where each query copies one visible real key: q.k of that pair is
    c^2 d ~ 2e5 (over float16's max 65504), scaled by 1/sqrt(d) ~ 2.5e4 (fits); the other scores are
    about 1/4 of it or less, so the softmax is one-hot up to ~e^-15000."""
    B, T = keep.shape
    H = 2
    signs = torch.from_numpy(rng.choice([-1.0, 1.0], size=(B, H, T, d)))
    k = c * signs
    q = torch.empty_like(k)
    for b in range(B):
        for t in range(T):
            visible = [s for s in range(t + 1) if keep[b, s]] or [t]  # no key: any finite q will do
            for h in range(H):
                q[b, h, t] = c * signs[b, h, visible[int(rng.integers(len(visible)))]]
    v = torch.from_numpy(rng.standard_normal((B, H, T, d)))
    return q.half(), k.half(), v.half()


@check("float16: q.k overflows float16, q.k / sqrt(d) does not", devices=("cpu", "cuda"))
def float16_scores(sub, ctx):
    keep = _keep(ALL_REAL, LEFT_PADDED, WITH_HOLES)
    q, k, v = _float16_overflow_inputs(ctx.rng(6), keep)
    scenario = (f"float16, shape {tuple(q.shape)}, entries of q and k are +-56 so q.k reaches 200704 (float16 max"
                f" is 65504) while q.k / sqrt(64) = 25088 fits; nearly one-hot softmax; {ctx.device}")
    got = _output(sub, q, k, v, keep, scenario)
    assert_finite(got, what="causal_attention output", scenario=scenario,
                  hint="An unscaled q @ k^T overflows to inf in float16 here; the scaled scores fit, so the scale"
                  " must be applied before the product can overflow (or the scores computed in float32).")
    want = _expected(q.float(), k.float(), v.float(), keep)  # the float32 inputs, computed in float64
    assert_close(_real_queries(got, keep), _real_queries(want, keep), what="causal_attention output vs the float32 computation",
                 scenario=scenario, rtol=1e-3, atol=1e-3, hint=MASK_HINT)


@check("gradients match autograd.gradcheck in float64", devices=("cpu", "cuda"))
def gradients_float64(sub, ctx):
    q, k, v = _qkv(ctx.rng(7), (3, 2, 6, 3))
    keep = _keep(ALL_REAL, LEFT_PADDED, ALL_PAD)
    gradcheck_float64(sub, ctx, "causal_attention", [q, k, v, keep], [0, 1, 2],
                      scenario=f"float64, shape (3, 2, 6, 3), keep rows: all real, left-padded, all pads, {ctx.device}")


# ---------------------------------------------------------------------------------------------
# lm_loss: tiny causal models, built inside the sandbox
# ---------------------------------------------------------------------------------------------
VOCAB = 7


def successor(token):
    """The oracle's language: after token a (1..6) always comes a % 6 + 1; 0 is free for the pad."""
    return token % (VOCAB - 1) + 1


class OracleModel(nn.Module):
    """Knows the language: at a position holding token a it puts logit 30 on successor(a) and 0
    elsewhere (also at a pad, which it predicts is followed by token 1). Causal: position t looks at
    x[:, t] only. Its loss is ~1e-12 when logits[:, t] are scored against x[:, t+1], and ~30 per
    token when they are scored against x[:, t] or against a pad."""

    def __init__(self):
        super().__init__()
        table = torch.zeros(VOCAB, VOCAB, dtype=torch.float64)
        for a in range(VOCAB):
            table[a, successor(a) if a else 1] = 30.0
        self.table = nn.Embedding(VOCAB, VOCAB, _weight=table)

    def forward(self, ids):
        return self.table(ids)


class TinyCausalModel(nn.Module):
    """Embedding -> h_t = e_t + 0.5 e_{t-1} -> linear; causal, and fine with zero positions."""

    def __init__(self, seed):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(VOCAB, 5, _weight=torch.randn(VOCAB, 5, generator=generator, dtype=torch.float64))
        self.out = nn.Linear(5, VOCAB, dtype=torch.float64)
        with torch.no_grad():
            self.out.weight.copy_(torch.randn(VOCAB, 5, generator=generator, dtype=torch.float64))
            self.out.bias.copy_(torch.randn(VOCAB, generator=generator, dtype=torch.float64))

    def forward(self, ids):
        e = self.embed(ids)  # (B, T, 5)
        previous = F.pad(e, (0, 0, 1, 0))[:, :-1]
        return self.out(e + 0.5 * previous)


def lm_loss_scenario(module, x, pad_id, model_kind, seed=0):
    """Observations only: the loss, whether backward() worked, and each parameter's gradient."""
    model = (OracleModel() if model_kind == "oracle" else TinyCausalModel(seed)).to(x.device)
    x_before = x.clone()
    loss = module.lm_loss(model, x, pad_id)
    seen = {"type": type(loss).__name__, "x_unchanged": bool(torch.equal(x.cpu(), x_before.cpu()))}
    if not isinstance(loss, torch.Tensor):
        seen["value"] = loss if isinstance(loss, (int, float)) else None
        return seen
    seen["value"] = loss.detach().cpu().clone()
    seen["backward_error"] = None
    if loss.numel() == 1:
        try:
            loss.backward()
        except RuntimeError as exc:  # reported, not judged: the check decides
            seen["backward_error"] = str(exc).strip().splitlines()[0][:300]
    seen["grads"] = {name: None if p.grad is None else p.grad.detach().cpu().clone() for name, p in model.named_parameters()}
    return seen


def _loss_observed(seen, scenario):
    """The loss as a value, after the contract's shape rules: a scalar tensor."""
    if seen["type"] != "Tensor":
        fail(f"lm_loss ({scenario}): expected a scalar torch tensor, got {seen['type']} {seen.get('value')!r}; return a"
             " tensor built from the model's logits so that loss.backward() reaches the parameters")
    if seen["value"].numel() != 1:
        fail(f"lm_loss ({scenario}): expected a scalar tensor, got shape {tuple(seen['value'].shape)}; average the"
             " per-token losses into one number")
    if not seen["x_unchanged"]:
        fail(f"lm_loss ({scenario}): x was modified in place; leave the caller's token ids unchanged")
    return seen["value"].reshape(())


def _backward_worked(seen, scenario):
    if seen["backward_error"] is not None:
        fail(f"lm_loss ({scenario}): loss.backward() raised: {seen['backward_error']}. The loss must be part of the"
             " autograd graph, the 0.0 included (a fresh torch.tensor(0.0) is not).")


@check("lm_loss: an oracle model scores ~0 only under the one-step shift", devices=("cpu", "cuda"))
def lm_oracle(sub, ctx):
    # Rows follow the oracle's language, padded on the right with 0.
    x = torch.tensor([[3, 4, 5, 6, 1, 2], [6, 1, 2, 0, 0, 0], [1, 2, 3, 4, 5, 0]])
    scenario = (f"vocabulary {VOCAB}, pad_id 0, x = {x.tolist()}, a model whose logits at position t are right for"
                f" x[:, t+1]; {ctx.device}")
    seen = sub.run(lm_loss_scenario, x, 0, "oracle")
    want = ctx.run_reference(lm_loss_scenario, x, 0, "oracle")
    got = _loss_observed(seen, scenario)
    assert_close(got, want["value"], what="loss", scenario=scenario, atol=1e-6, rtol=0,
                 hint="The logits at position t predict the NEXT token: score them against x[:, t+1], never x[:, t],"
                 " and leave the pad targets out.")
    _backward_worked(seen, scenario)


@check("lm_loss: pad targets are left out of the mean", devices=("cpu", "cuda"))
def lm_pad_targets(sub, ctx):
    pad_id = 3
    # Rows of different lengths: right padding, left padding, none; a real first token after
    # left pads IS a target (it is not pad_id), the pads are not.
    x = torch.tensor([[1, 5, 2, 6, 3, 3, 3], [3, 3, 4, 0, 1, 2, 5], [2, 2, 6, 0, 4, 1, 5], [0, 6, 3, 3, 3, 3, 3]])
    scenario = (f"vocabulary {VOCAB}, pad_id {pad_id}, x = {x.tolist()}, a small random causal model (float64);"
                f" {ctx.device}")
    seen = sub.run(lm_loss_scenario, x, pad_id, "tiny", seed=11)
    want = ctx.run_reference(lm_loss_scenario, x, pad_id, "tiny", seed=11)
    calibration = _torch_cross_entropy(x, pad_id, seed=11)
    if abs(float(want["value"]) - calibration) > 1e-9:
        raise GraderDefect(f"reference lm_loss {float(want['value'])} disagrees with F.cross_entropy {calibration}")
    got = _loss_observed(seen, scenario)
    assert_close(got, want["value"], what="loss", scenario=scenario, dtype=torch.float64,
                 hint=f"Average the cross-entropy over every target x[:, t+1] that is not pad_id ({pad_id}), all rows"
                 " together (each real target weighs the same, whatever its row's length).")
    _backward_worked(seen, scenario)
    for name, want_grad in want["grads"].items():
        got_grad = seen["grads"].get(name)
        if got_grad is None:
            fail(f"lm_loss ({scenario}): no gradient reached the model parameter {name!r} after loss.backward()")
        assert_close(got_grad, want_grad, what=f"gradient of the loss w.r.t. {name}", scenario=scenario,
                     dtype=torch.float64)


def _torch_cross_entropy(x, pad_id, seed):
    """Calibration: F.cross_entropy with ignore_index, the textbook form."""
    with torch.no_grad():
        logits = TinyCausalModel(seed)(x[:, :-1])
        return float(F.cross_entropy(logits.transpose(1, 2), x[:, 1:], ignore_index=pad_id))


@check("lm_loss: no targets (all pads, or T = 1) give a 0.0 that backpropagates", devices=("cpu", "cuda"))
def lm_no_targets(sub, ctx):
    cases = [
        (torch.tensor([[2, 2, 2, 2], [2, 2, 2, 2]]), 2, "every token is the pad (pad_id 2), x shape (2, 4)"),
        (torch.tensor([[2, 2, 2, 2], [5, 2, 2, 2]]), 2, "every TARGET is the pad (pad_id 2), x shape (2, 4)"),
        (torch.tensor([[4], [1], [6]]), 0, "T = 1, x shape (3, 1), pad_id 0, nothing to predict"),
    ]
    for x, pad_id, what in cases:
        scenario = f"{what}, a small random causal model (float64); {ctx.device}"
        seen = sub.run(lm_loss_scenario, x, pad_id, "tiny", seed=12)
        got = _loss_observed(seen, scenario)
        assert_close(got, 0.0, what="loss", scenario=scenario, atol=1e-12, rtol=0.0,
                     hint="With no real target the mean is 0/0 = NaN; the contract asks for 0.0 (divide by a count"
                     " of at least 1, or handle the empty case).")
        _backward_worked(seen, scenario)
        for name, grad in seen["grads"].items():
            if grad is not None:  # a parameter the graph never reached counts as a zero gradient
                assert_close(grad, torch.zeros_like(grad), what=f"gradient w.r.t. {name}", scenario=scenario,
                             atol=0.0, rtol=0.0, hint="A loss of 0.0 must give zero gradients.")
