"""What the loss graders share (masked-ce, softmax-regression): why a result computed from logits is not finite,
told by control calls on the same logits moved row by row (each row shifted by a constant), which leave every
softmax, log-softmax and cross-entropy exactly as it was.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from mlprep.grading.handles import Submission
from mlprep.grading.probes import control_value

# Per dtype: exp overflows above the first; a row spanning more than the second underflows exp(smallest - max) to 0.
EXP_LIMITS = {"float64": (709.0, 745.0), "float32": (88.0, 104.0)}
OVERFLOW_FIX = "subtract each row's maximum from the logits before exp, or work with log-sum-exp throughout"
UNDERFLOW_FIX = "take log-probabilities as z - max - log(sum(exp(z - max))), never the log of a softmax"


def all_finite(got: Any) -> bool:
    """Whether a result holds only finite numbers (raises on one that is not numbers: no evidence)."""
    return bool(np.isfinite(np.asarray(got, dtype=np.float64)).all())


def shifted_logits_hint(sub: Submission, fn: str, logits: Any, *args: Any, finite: Callable[[Any], bool] = all_finite, T: float = 1.0,
                        what: str = "loss", fix: str = OVERFLOW_FIX, logs: bool = True, **kwargs: Any) -> str:
    """Why fn(logits, *args, **kwargs) gave a non-finite `what` (a sentence, or ""), at logits that are large for their
    dtype (|logits| / T near exp's overflow or beyond). The control fn(logits - row max, *args, **kwargs) gives the
    same `what` exactly: when `finite(its result)`, either exp overflowed, or, when the same rows moved to share one
    maximum (the batch's) come back finite as well, one maximum was subtracted for the whole batch (or per column),
    which underflows the rows whose own maximum lies far below it. When the shifted logits are not finite either
    and a row spans more than exp's range (`logs`: where a log of a softmax is taken), exp(smallest - max)
    underflowed to 0 and its log is -inf."""
    z = np.asarray(logits)
    dtype = "float32" if z.dtype == np.float32 else "float64"
    overflow, underflow = EXP_LIMITS[dtype]
    if z.size == 0 or np.abs(z).max() / T < overflow - 9:
        return ""
    shifted = control_value(sub, fn, z - z.max(axis=-1, keepdims=True), *args, read=finite, **kwargs)
    if shifted is None:
        return ""
    if shifted:
        row_max = z.max(axis=-1, keepdims=True)
        gap = float((row_max.max() - row_max.min()) / T)
        if z.ndim == 2 and gap > underflow and control_value(sub, fn, z - row_max + z.max(), *args, read=finite, **kwargs):
            return (f"The same logits shifted by their row maximum (the same {what}) give a finite result, and so do the same rows moved to"
                    f" share one maximum, the batch's: so a maximum taken over the whole batch (or per column) was subtracted, and a row whose own"
                    f" maximum lies {gap:g} below it underflows to 0; subtract each row's own maximum (max(axis=-1, keepdims=True)).")
        return (f"The same logits shifted by their row maximum (the same {what}) give a finite result, so exp overflowed (above a logit of about"
                f" {overflow:g} in {dtype}): {fix}.")
    span = float((z.max(axis=-1) - z.min(axis=-1)).max()) / T
    if logs and span > underflow:
        return (f"Even shifted by their row maximum these logits give a non-finite {what}: a row spans {span:g}, so exp of its smallest entry"
                f" minus the maximum underflows to 0 and log(softmax) is log(0) = -inf; {UNDERFLOW_FIX}.")
    return ""
