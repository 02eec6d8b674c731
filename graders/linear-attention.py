"""Checks for `linear-attention`: kernelised attention with phi = elu + 1, O(T) memory.

Expectations are the quadratic kernel form computed here in float64 (`kernel_form`); the contract allows a normaliser
eps up to 1e-5, so a value is compared with the nearest point between the result without eps and with eps = 1e-5, at the
dtype's tolerance. Memory is measured from outside Python's allocator: on the CPU `capped_call` lowers the sandbox's soft
address-space limit (RLIMIT_AS) to 3 GiB above what the process has mapped just before the call (the exercise's
memory_mb is set above that, so the sandbox's own cap never binds first); on CUDA it reads torch.cuda's peak allocation.
The growth check's bound, 3x the reference's growth from T = 8192 to 65536 in the same run (linear memory grows about 8x,
the (T, T) matrix 64x), was calibrated on the correct solutions: they grew 0.18-1.3x the reference's, the most (1.3x)
the Python loop over T, whose small tensors partly reuse memory Python's allocator kept at T = 8192.
"""

import re
import resource
from functools import partial
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from mlprep.grading import (Call, Snapshot, assert_close, assert_returns_like, check, control_value, dtype_name, explained, fail, fail_if_changed,
                            gradcheck_float64, growth_check, measure_peak_memory, same_values, scenario, shrink_on_failure, sized, value_and_grad)
from mlprep.grading.attention import attention_output, causality_probe, f64, float32_hint, known_mistake, normal, small_values, tensors

MAX_EPS = 1e-5  # the largest normaliser eps the contract allows
BIG_T, BIG_D = 65536, 16  # the memory case: (T, T) float32 scores alone need 16 GiB
EXTRA_BYTES = 3 * 2**30
ROWS = [0, 1, 2, 3, 1000, 30000, 65532, 65533, 65534, 65535]  # rows of the large case compared with the judge
EPS_NOTE = f"(The expected values allow a normaliser eps from 0 to {MAX_EPS:g}.)"


# -- Expectations (judge side) ---------------------------------------------------------------------
def phi(x):
    return F.elu(x) + 1.0


def kernel_form(q, k, v, causal, eps=0.0, *, feature=phi, q_scale=1.0, normalise=True, diagonal=0, den_causal=None):
    """The quadratic kernel form in float64, and (through the keywords) the known mistakes of it."""
    q, k, v = f64(q, k, v)
    scores = feature(q * q_scale) @ feature(k).transpose(-2, -1)  # (B, H, T, T)
    num_scores = scores.tril(diagonal) if causal else scores
    den_scores = scores.tril(diagonal) if (causal if den_causal is None else den_causal) else scores
    num = num_scores @ v
    if not normalise:
        return num
    return num / (den_scores.sum(dim=-1, keepdim=True) + eps)


def _mistakes(q, k, v, causal):
    """(hint, output) for each known mistake, computed lazily in float64."""
    d = q.shape[-1]
    if causal:
        yield ("Your output is what the non-causal form gives (every key, later ones included): position t must see keys"
               " 0..t only, through prefix sums (cumsum over T) of phi(k) v^T and of phi(k).", lambda: kernel_form(q, k, v, False))
        yield ("Your output is what a causal numerator over a normaliser summed over ALL keys gives: the normaliser must be"
               " causal too, phi(q_t) . sum_{j<=t} phi(k_j).", lambda: kernel_form(q, k, v, True, den_causal=False))
        yield ("Your output is what prefix sums over keys 0..t-1 give (an exclusive cumsum, the diagonal left out): position"
               " t sees its own key as well (position 0 then sees nothing).", lambda: kernel_form(q, k, v, True, diagonal=-1))
    else:
        yield ("Your output with causal=False is the causal one: with causal=False every position sees every key (plain"
               " sums over T, no prefix sums).", lambda: kernel_form(q, k, v, True))
    yield ("Your output is the numerator alone, phi(q) S, without dividing by the normaliser phi(q) . z (z the sum of"
           " phi(k) over the same keys).", lambda: kernel_form(q, k, v, causal, normalise=False))
    yield ("Your output is what phi = elu(x) (without the + 1) gives: the feature map must be positive, elu(x) + 1.",
           lambda: kernel_form(q, k, v, causal, feature=F.elu))
    yield (f"Your output is what q scaled by 1 / sqrt(d) = 1 / sqrt({d}) before phi gives: the contract applies phi to q"
           " as given (no scale).", lambda: kernel_form(q, k, v, causal, q_scale=d ** -0.5))
    yield ("Your output is what phi = exp gives: the feature map is elu(x) + 1 (x + 1 for x > 0, exp(x) for x <= 0).",
           lambda: kernel_form(q, k, v, causal, feature=torch.exp))


# Matching a known mistake: its values differ from the truth by O(1), so a loose tolerance that also
# covers any allowed eps is safe.
MATCH_RTOL, MATCH_ATOL = 1e-3, 1e-4


def _diagnose(got, q, k, v, causal):
    """A hint for a wrong output: the known mistake it equals, else NaN, else float32-sized errors on
    float64 inputs; or ""."""
    got, want = f64(got), kernel_form(q, k, v, causal)
    if got.shape != want.shape:
        return ""
    known = known_mistake(got, _mistakes(q, k, v, causal), want, rtol=MATCH_RTOL, atol=MATCH_ATOL)
    if known:
        return known
    if bool(got.isnan().any()):
        return ("NaN comes from 0/0 or inf/inf: phi = elu + 1 is positive, so the normaliser phi(q_t) . z_t is positive"
                " unless z_t misses key t itself (or phi is not elu + 1).")
    return float32_hint(got, want, lambda: kernel_form(q.float(), k.float(), v.float(), causal).float(), q.dtype, what="float32",
                        fix="keep the computation in float64")


def _judge(got, q, k, v, causal, scenario, *, what="linear_attention output", expected=None):
    """got against the kernel form: the nearest point of [no eps, eps = 1e-5], at q's dtype tolerance.
    `expected` = (without eps, with eps = 1e-5) when given, else the kernel form of q, k, v."""
    got_t = f64(got)
    exact, with_eps = expected or (kernel_form(q, k, v, causal), kernel_form(q, k, v, causal, MAX_EPS))
    if got_t.shape != exact.shape:
        assert_close(got_t, exact, what=what, scenario=scenario, dtype=q.dtype)  # fails on the shape
    nearest = torch.where(got_t.isnan(), exact, torch.minimum(torch.maximum(got_t, torch.minimum(exact, with_eps)), torch.maximum(exact, with_eps)))
    with explained(partial(_diagnose, got, q, k, v, causal) if k is not None else (lambda: "")):
        assert_close(got_t, nearest, what=what, scenario=scenario, dtype=q.dtype, hint=EPS_NOTE)


def _output(sub, q, k, v, causal, scenario, *, default=False):
    """The learner's output after the common rules; `default`: called without the causal argument (its default, True)."""
    return attention_output(sub, "linear_attention", q, k, v, what="linear_attention output", shape=(*q.shape[:-1], v.shape[-1]), scenario=scenario,
                            **({} if default else {"causal": causal}))


def _qkv(rng, shape, dv, dtype=torch.float32):
    return normal(rng, shape, shape, (*shape[:-1], dv), dtype=dtype)


def _describe(q, v, causal, device, extra=""):
    return f"{dtype_name(q.dtype)}, q/k shape {tuple(q.shape)}, v shape {tuple(v.shape)}, causal={causal}{extra}, {device}"


# Tiny hand-written inputs (B = H = 1, T = 3, d = 2, dv = 2): written out in full when they fail.
TINY = ([[[[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]]]], [[[[1.0, 0.5], [-0.5, 1.5], [2.0, -1.0]]]], [[[[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]]]])


def _small_cases():
    """Hypothesis strategy for shrinking: ((B, H, T, d, dv), (q, k, v)) with small integer values, float32."""
    from hypothesis import strategies as st

    def of_shape(B, H, T, d, dv):
        return st.tuples(st.just((B, H, T, d, dv)), small_values(B * H * T * d, B * H * T * d, B * H * T * dv))

    return sized((1, 2), (1, 2), (1, 4), (1, 2), (1, 2), then=of_shape)


def _verify_small(sub, causal, case):
    (B, H, T, d, dv), (qs, ks, vs) = case
    q, k = (torch.tensor(x).reshape(B, H, T, d) for x in (qs, ks))
    v = torch.tensor(vs).reshape(B, H, T, dv)
    scenario = _describe(q, v, causal, sub.device)
    _judge(_output(sub, q, k, v, causal, scenario), q, k, v, causal, scenario)


def _matches(sub, ctx, causal, seed):
    q, k, v = tensors(*TINY, dtype=torch.float32)
    scenario = _describe(q, v, causal, ctx.device)
    _judge(_output(sub, q, k, v, causal, scenario), q, k, v, causal, scenario)
    rng = ctx.rng(seed)
    with shrink_on_failure(sub, _small_cases, partial(_verify_small, sub, causal)):
        for shape, dv in (((1, 1, 1, 3), 2), ((2, 3, 7, 4), 5), ((2, 2, 64, 8), 16), ((1, 2, 300, 3), 1)):  # small to large
            q, k, v = _qkv(rng, shape, dv)
            scenario = _describe(q, v, causal, ctx.device, extra=", q/k/v ~ N(0, 1)")
            _judge(_output(sub, q, k, v, causal, scenario), q, k, v, causal, scenario)


# -- Checks ----------------------------------------------------------------------------------------
@check("causal: position 0 sees only itself, so its output is v at position 0", devices=("cpu", "cuda"))
def position_zero(sub, ctx):
    cases = [tensors(*TINY, dtype=torch.float32), _qkv(ctx.rng(1), (2, 2, 5, 3), 4)]  # small to large; the first leaves causal at its default
    for i, (q, k, v) in enumerate(cases):
        scenario = _describe(q, v, True, ctx.device, extra=" (the default)" if i == 0 else "")
        got = _output(sub, q, k, v, True, scenario, default=i == 0)
        first = (kernel_form(q[:, :, :1], k[:, :, :1], v[:, :, :1], True), kernel_form(q[:, :, :1], k[:, :, :1], v[:, :, :1], True, MAX_EPS))
        with explained(partial(_diagnose, got, q, k, v, True)):
            _judge(torch.as_tensor(got)[:, :, :1], q, k, v, True, scenario, what="output at position 0 (must equal v[:, :, 0])", expected=first)


@check("causal: equals the masked quadratic kernel form", devices=("cpu", "cuda"))
def matches_causal(sub, ctx):
    _matches(sub, ctx, True, seed=2)


@check("causal=False: equals the unmasked kernel form", devices=("cpu", "cuda"))
def matches_non_causal(sub, ctx):
    _matches(sub, ctx, False, seed=3)


@check("causality: q, k, v at positions j.. change no output before j", devices=("cpu", "cuda"))
def causality(sub, ctx):
    rng = ctx.rng(4)
    for T, j in ((2, 1), (9, 4)):  # small to large
        q, k, v = _qkv(rng, (1, 2, T, 3), 2)
        changed = tuple(t.clone() for t in (q, k, v))
        for t in changed:
            t[:, :, j:] = torch.from_numpy(5.0 * rng.standard_normal(t[:, :, j:].shape)).to(t.dtype)
        causality_probe(sub, "linear_attention", (q, k, v), changed, j, what=f"outputs at positions 0..{j - 1}", shape=(1, 2, T, 2), kwargs={"causal": True},
                        scenario=_describe(q, v, True, ctx.device, extra=f", q/k/v at positions {j}.. replaced by other values (5 * N(0, 1))"),
                        moved_by_v=("Changing only v at positions {j}.. moves them too: the numerator sums phi(k_j) v_j^T over later positions. Use"
                                    " prefix sums over j <= t (cumsum over T, inclusive) for the numerator and the normaliser."),
                        moved_by_k=("Changing only v at positions {j}.. leaves them unchanged, but changing k moves them: the numerator is causal"
                                    " and the normaliser is not. Divide by phi(q_t) . z_t with z_t the prefix sum of phi(k_j) over j <= t."))


@check("float64 inputs are computed in float64", devices=("cpu", "cuda"))
def float64_precision(sub, ctx):
    # Every key is the same vector, so each position weighs the keys it sees equally and its output is the plain mean
    # of v over them. v = +-4096 + N(0, 1), alternating: the means are O(1) where the signs cancel. Rounded to float32,
    # v moves by up to 4096 * 2**-24 = 2.4e-4, far outside float64's tolerance; float64 is exact to ~1e-12 here.
    rng = ctx.rng(5)
    for causal in (True, False):
        q = torch.from_numpy(rng.standard_normal((1, 1, 6, 2)))
        k = torch.from_numpy(rng.standard_normal((1, 1, 1, 2))).expand(1, 1, 6, 2).clone()
        signs = torch.tensor([1.0, -1.0] * 3, dtype=torch.float64)[None, None, :, None]
        v = 4096.0 * signs + torch.from_numpy(rng.standard_normal((1, 1, 6, 2)))
        scenario = _describe(q, v, causal, ctx.device, extra=", every key the same vector, v = +-4096 + N(0, 1) with alternating signs")
        _judge(_output(sub, q, k, v, causal, scenario), q, k, v, causal, scenario)


# -- Gradients w.r.t. q, k, v in float64 -----------------------------------------------------------
def _grad_inputs(rng, shape, dv):
    """float64 q, k whose features are near 15 but the first, N(0, 1) - 1 (mostly negative: phi's exp branch), so
    the normaliser is above 500 at every position and an eps up to 1e-5 moves no gradient by more than a fifth of
    float64's tolerance; v ~ N(0, 1). Rounded to 2 decimals, so a failing input reads short."""
    def qk():
        a = 15.0 + rng.standard_normal(shape)
        a[..., 0] = rng.standard_normal(shape[:-1]) - 1.0
        return torch.from_numpy(a.round(2))
    q, k = qk(), qk()
    return q, k, torch.from_numpy(rng.standard_normal((*shape[:-1], dv)).round(2))


def _detached_normaliser(q, k, v, causal):
    """The kernel form with the normaliser cut off from autograd (float64 CPU q, k, v: autograd must reach them)."""
    scores = phi(q) @ phi(k).transpose(-2, -1)
    scores = scores.tril() if causal else scores
    return (scores @ v) / scores.sum(dim=-1, keepdim=True).detach()


def _gradient_hint(sub, q, k, v, causal):
    """Control: the learner's gradients again, against what a detached normaliser gives (value_and_grad, judge side)."""
    grads = control_value(sub, value_and_grad, "linear_attention", [q, k, v], [0, 1, 2], {"causal": causal}, read=lambda got: got[1])
    detached = value_and_grad(SimpleNamespace(linear_attention=_detached_normaliser), "linear_attention", f64(q, k, v), [0, 1, 2], {"causal": causal})
    if same_values(grads, detached[1], rtol=1e-7, atol=1e-7):
        return ("Your gradients are exactly what a normaliser cut off from autograd gives (phi(q) . z under torch.no_grad() or"
                " .detach()ed): the output's value is right, but it depends on q and k through the normaliser as well, so"
                " the gradient must flow through it too.")
    return ""


@check("gradients w.r.t. q, k and v (float64), causal and not", devices=("cpu", "cuda"))
def gradients_float64(sub, ctx):
    rng = ctx.rng(6)
    for shape, dv in (((1, 1, 3, 4), 2), ((2, 1, 3, 3), 2)):  # small to large: at most 20 numbers per tensor
        q, k, v = _grad_inputs(rng, shape, dv)
        for causal in (True, False):
            scenario = _describe(q, v, causal, ctx.device, extra=", q/k features near 15 but the first (the normaliser above 500),"
                                                                 " gradients of sum(output * w) with fixed random weights w")
            with explained(partial(_gradient_hint, sub, q, k, v, causal)):
                gradcheck_float64(sub, ctx, "linear_attention", [q, k, v], wrt=[0, 1, 2], kwargs={"causal": causal}, scenario=scenario)


# -- Memory: T = 65536 within 3 GiB more than before the call --------------------------------------
def _long_inputs(seed, T, H, d, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, H, T, d, generator=generator).to(device) for _ in range(3))


def _mapped_bytes():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024


def _allocation_failed(exc):
    text = str(exc)
    return isinstance(exc, MemoryError) or "can't allocate memory" in text or "Cannot allocate memory" in text or "out of memory" in text


def _capped_repro(interface, seed, causal, device):
    make = (f"g = torch.Generator().manual_seed({seed})\n"
            f"q, k, v = (torch.randn(1, 1, {BIG_T}, {BIG_D}, generator=g).to(\"{device}\") for _ in range(3))\n")
    if device.startswith("cuda"):
        return Call.code(make + "torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()\n"
                         f"out = linear_attention(q, k, v, causal={causal})\n"
                         "(torch.cuda.max_memory_allocated() - base) / 2**30  # GiB allocated by the call: at most 3")
    return Call.code(make + "import resource\n"
                     "mapped = int(open('/proc/self/status').read().split('VmSize:')[1].split()[0]) * 1024\n"
                     "resource.setrlimit(resource.RLIMIT_AS, (mapped + 3 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))  # 3 GiB more than now\n"
                     f"linear_attention(q, k, v, causal={causal}).shape  # fails to allocate if the call needs more")


@scenario(repro=_capped_repro)
def capped_call(module, seed, causal, device):
    """Scenario: the call on the large case with 3 GiB of extra memory (address space on the CPU, the CUDA
    allocator's peak on CUDA); returns what was measured, the output's shape and rows ROWS, and which inputs
    the call changed in place (at this size too: an in-place elu saves memory only where it matters)."""
    q, k, v = _long_inputs(seed, BIG_T, 1, BIG_D, device)
    before = Snapshot(q=q, k=k, v=v)  # taken before the cap is measured: its copy is part of what was mapped before the call
    seen = {"error": None, "cuda_extra_bytes": None, "extra_allowed": EXTRA_BYTES}
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        mapped = _mapped_bytes()
        cap = mapped + EXTRA_BYTES if hard == resource.RLIM_INFINITY else min(mapped + EXTRA_BYTES, hard)
        seen["extra_allowed"] = cap - mapped  # less than 3 GiB only if the sandbox's own cap (memory_mb) is closer
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        out = module.linear_attention(q, k, v, causal=causal)
        if cuda:
            torch.cuda.synchronize()
    except (MemoryError, RuntimeError) as exc:
        if not _allocation_failed(exc):
            raise
        seen["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
        return seen
    finally:
        if not cuda:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    if cuda:
        seen["cuda_extra_bytes"] = int(torch.cuda.max_memory_allocated() - base)
    seen["changed"] = before.changed()
    seen["shape"] = list(out.shape) if isinstance(out, torch.Tensor) else None
    seen["rows"] = out[:, :, ROWS].detach().clone() if isinstance(out, torch.Tensor) and out.dim() == 4 and out.shape[2] == BIG_T else out
    return seen


def _rows_expected(seed, causal):
    """The kernel form at rows ROWS only, in float64, without eps and with eps = 1e-5: row t needs keys 0..t
    (or all of them), O(T d dv) each."""
    q, k, v = (t.double() for t in _long_inputs(seed, BIG_T, 1, BIG_D))
    fq, fk = phi(q[0, 0]), phi(k[0, 0])
    exact, with_eps = [], []
    for t in ROWS:
        keys = slice(0, t + 1) if causal else slice(None)
        weights = fk[keys] @ fq[t]  # (t + 1,)
        num, den = weights @ v[0, 0, keys], weights.sum()
        exact.append(num / den)
        with_eps.append(num / (den + MAX_EPS))
    return torch.stack(exact)[None, None], torch.stack(with_eps)[None, None]


def _allocation_hint(error):
    """What the failed allocation's size says, when the message gives it (torch's CPU allocator does)."""
    found = re.search(r"allocate (\d+) bytes", error)
    prefix_sums = f"{BIG_T * BIG_D * BIG_D * 4 / 2**20:g} MiB"
    if found and int(found.group(1)) >= BIG_T * BIG_T:
        n = int(found.group(1))
        return (f"{n} bytes is {n / (BIG_T * BIG_T):g} bytes per entry of a ({BIG_T}, {BIG_T}) matrix: never build the (T, T)"
                " matrix phi(q) phi(k)^T, not even masked; carry prefix sums (cumsum over T) of phi(k) v^T and of phi(k), or walk"
                f" T in chunks with a running (d, dv) state (the (T, d, dv) prefix sums take {prefix_sums} in float32 here).")
    return (f"Memory must grow linearly in T: the (T, d, dv) prefix sums take {prefix_sums} in float32 here; look for an"
            " intermediate whose size grows like T^2.")


@check(f"memory: T = {BIG_T}, d = dv = {BIG_D} (float32) fits in 3 GiB beyond the inputs", devices=("cpu", "cuda"))
def memory_linear_in_t(sub, ctx):
    for seed, causal in ((7, True), (8, False)):
        scenario = (f"float32, q/k/v shape (1, 1, {BIG_T}, {BIG_D}), causal={causal}, {ctx.device}; the (T, T) matrix alone would"
                    f" take {BIG_T * BIG_T * 4 / 2**30:g} GiB")
        seen = sub.run(capped_call, seed, causal, ctx.device)
        if seen["error"] is not None:
            allowed = seen["extra_allowed"] / 2**30
            where = "on CUDA" if ctx.device.startswith("cuda") else f"within {allowed:.3g} GiB of address space beyond what the process had mapped before the call"
            short = (" (less than 3 GiB: the sandbox's own limit, memory_mb, was closer, because the process had already mapped"
                     " memory that earlier calls kept)") if allowed < 2.99 else ""
            fail(f"linear_attention ({scenario}) could not allocate its memory {where}{short}: {seen['error']}."
                 f" {_allocation_hint(seen['error'])}", error=seen["error"], extra_allowed=seen["extra_allowed"])
        if seen["cuda_extra_bytes"] is not None and seen["cuda_extra_bytes"] > EXTRA_BYTES:
            fail(f"linear_attention ({scenario}) allocated {seen['cuda_extra_bytes'] / 2**30:.2f} GiB of CUDA memory at its peak"
                 " (torch.cuda.max_memory_allocated beyond the inputs), more than 3 GiB: never build the (T, T) matrix; carry"
                 " prefix sums of phi(k) v^T and phi(k) instead.", extra_bytes=seen["cuda_extra_bytes"])
        if seen["shape"] != [1, 1, BIG_T, BIG_D]:
            fail(f"linear_attention output ({scenario}): expected a tensor of shape (1, 1, {BIG_T}, {BIG_D}), got"
                 f" {'shape ' + str(tuple(seen['shape'])) if seen['shape'] else type(seen['rows']).__name__}")
        assert_returns_like(seen["rows"], torch.zeros(1), what="linear_attention output", scenario=scenario, device=sub.device)
        q = torch.zeros(1, dtype=torch.float32)  # only its dtype matters: the tolerance
        _judge(seen["rows"], q, None, None, causal, scenario, what=f"linear_attention output at positions {ROWS}",
               expected=_rows_expected(seed, causal))
        fail_if_changed(seen["changed"], who="linear_attention", where=scenario, fix="keep elu out of place (F.elu(q) + 1, not F.elu(q, inplace=True)),"
                        " at every length")


# -- Memory growth: the peak at T = 8192 and at T = 65536, against the reference's growth ----------
GROWTH_T = (8192, 65536)  # 8x the length: memory linear in T grows about 8x, the (T, T) matrix 64x
MAX_MEMORY_GROWTH = 3.0  # the learner's growth over the reference's, measured in the same run: linear 8x, (T, T) 64x


def _peak_code(seed, H, d, causal, device):
    """Code that measures the peak memory of a call the way measure_peak_memory does, at both lengths."""
    make = (f"    g = torch.Generator().manual_seed({seed})\n"
            f"    q, k, v = (torch.randn(1, {H}, T, {d}, generator=g).to(\"{device}\") for _ in range(3))\n")
    if device.startswith("cuda"):
        measure = ("    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()\n"
                   f"    linear_attention(q, k, v, causal={causal}); torch.cuda.synchronize()\n"
                   "    return torch.cuda.max_memory_allocated() - base\n")
    else:
        measure = ("    gc.collect(); ctypes.CDLL(None).malloc_trim(0)  # free pages back to the system\n"
                   "    open('/proc/self/clear_refs', 'w').write('5')  # the peak resident set starts again from now\n"
                   "    base = hwm()\n"
                   f"    linear_attention(q, k, v, causal={causal})\n"
                   "    return hwm() - base\n")
        measure = ("    hwm = lambda: int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) * 1024\n" + measure)
    small, large = GROWTH_T
    return Call.code(("import ctypes, gc\n" if not device.startswith("cuda") else "") + "def peak_bytes(T):\n" + make + measure
                     + f"peak_bytes({large}) / peak_bytes({small})  # growth of your peak memory: at most {MAX_MEMORY_GROWTH:g}x the reference's")


@scenario(repro=lambda interface, seed, T, H, d, causal, device: _peak_code(seed, H, d, causal, device))
def peak_memory_at(module, seed, T, H, d, causal, device):
    """Scenario: the bytes linear_attention allocates at its peak beyond its inputs (measure_peak_memory: the peak
    resident set on the CPU, torch.cuda's peak allocation on CUDA), on float32 q, k, v of shape (1, H, T, d) built
    here from a seed."""
    q, k, v = _long_inputs(seed, T, H, d, device)
    with measure_peak_memory(device) as peak:
        module.linear_attention(q, k, v, causal=causal)
    return peak.bytes


@check(f"memory: the peak grows from T = {GROWTH_T[0]} to {GROWTH_T[1]} at most {MAX_MEMORY_GROWTH:g}x the reference's growth (linear in T)",
       devices=("cpu", "cuda"))
def memory_growth(sub, ctx):
    small, large = GROWTH_T
    # Non-causal with H = 4, d = dv = 32: its peak at T = 8192 (about 16 MiB, a tenth of the causal prefix sums') is then
    # well above what a few small allocations more or less change. (Causal that large would cost seconds: (T, d, dv)
    # prefix sums of 256 MiB per head.)
    for seed, causal, H, d in ((9, True, 1, BIG_D), (10, False, 4, 2 * BIG_D)):
        growth_check(sub, ctx, peak_memory_at, (seed, small, H, d, causal, ctx.device), (seed, large, H, d, causal, ctx.device),
                     sizes=GROWTH_T, size_format="T = {:,}", measure="memory", max_growth=MAX_MEMORY_GROWTH,
                     what=f"growth of linear_attention's peak memory, float32, B = 1, H = {H}, d = dv = {d}, causal={causal}, {ctx.device}",
                     hint=("Memory must grow linearly in T: never build the (T, T) matrix phi(q) phi(k)^T, not even masked or in pieces"
                           " that are all kept; carry prefix sums (cumsum over T) of phi(k) v^T and of phi(k), or a running (d, dv) state."),
                     failing_input=_peak_code(seed, H, d, causal, ctx.device))
