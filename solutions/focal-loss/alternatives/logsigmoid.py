"""Log-space with F.logsigmoid: log p = logsigmoid(z), log(1 - p) = logsigmoid(-z), so the BCE
is -(y log p + (1 - y) log(1 - p)) without ever forming p; p_t = exp(-BCE). The loss is
reduced with sum / numel rather than .mean(), the sum accumulated and kept in at least float32
(a float16 sum of a few thousand losses overflows float16's 65504)."""

import torch
import torch.nn.functional as F


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    log_p_t = y * F.logsigmoid(z) + (1 - y) * F.logsigmoid(-z)
    p_t = log_p_t.exp()
    alpha_t = torch.where(y > 0.5, torch.full_like(z, alpha), torch.full_like(z, 1 - alpha))
    per_element = -alpha_t * torch.pow(1 - p_t, gamma) * log_p_t
    wide = torch.promote_types(per_element.dtype, torch.float32)
    return per_element.sum(dtype=wide) / z.numel()
