"""Gradient accumulation as one big batch (where memory allows): torch.cat of the micro-batches,
one backward of the mean loss, torch.nn.utils.clip_grad_norm_, one step."""

import torch


def accumulate_step(model, loss_fn, micro_batches, optimizer, max_grad_norm=None):
    if len(micro_batches) == 0:
        raise ValueError("no micro-batches")
    x = torch.cat([x for x, _ in micro_batches])
    y = torch.cat([y for _, y in micro_batches])
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model, (x, y))  # the mean over all rows: exactly the accumulated objective
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()
