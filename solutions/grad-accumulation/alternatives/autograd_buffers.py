"""Gradient accumulation into buffers of my own with torch.autograd.grad (p.grad is only written
once, right before the step), and clipping written out by hand."""

import math

import torch


def accumulate_step(model, loss_fn, micro_batches, optimizer, max_grad_norm=None):
    batches = list(micro_batches)
    if not batches:
        raise ValueError("micro_batches is empty")
    params = [p for p in model.parameters() if p.requires_grad]
    n_total = sum(x.shape[0] for x, _ in batches)
    buffers = [None] * len(params)
    for x, y in batches:
        grads = torch.autograd.grad(loss_fn(model, (x, y)), params, allow_unused=True)
        share = x.shape[0] / n_total
        for i, g in enumerate(grads):
            if g is not None:
                buffers[i] = g * share if buffers[i] is None else buffers[i] + g * share
    if max_grad_norm is not None:
        squares = sum(float((b.double() ** 2).sum()) for b in buffers if b is not None)
        norm = math.sqrt(squares)
        if norm > max_grad_norm:
            buffers = [None if b is None else b * (max_grad_norm / norm) for b in buffers]
    # The stale gradients are replaced outright (or removed where this step has none).
    for p, b in zip(params, buffers):
        p.grad = b
    optimizer.step()
    for p in params:
        p.grad = None
