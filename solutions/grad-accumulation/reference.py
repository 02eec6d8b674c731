"""Gradient accumulation: one optimizer step from several micro-batches (reference solution).

Backward adds into p.grad, so running backward once per micro-batch sums their gradients. To get
the gradient of one big batch's MEAN loss, each micro-batch's mean loss is weighted by its share
of the rows, n_i / N, before backward: sum_i (n_i / N) * mean_i = the mean over all N rows. With
equal sizes that is the familiar loss / accumulation_steps; with an uneven last micro-batch,
dividing by the number of micro-batches would give its rows too much (or too little) weight.
"""

import torch


def accumulate_step(model, loss_fn, micro_batches, optimizer, max_grad_norm=None):
    micro_batches = list(micro_batches)
    if not micro_batches:
        raise ValueError("accumulate_step needs at least one micro-batch")
    sizes = [int(x.shape[0]) for x, _ in micro_batches]
    total = sum(sizes)
    if total == 0:
        raise ValueError("the micro-batches hold no rows")

    # Gradients left over from earlier work must not leak into this step.
    optimizer.zero_grad()
    loss_sum = 0.0
    for (x, y), n in zip(micro_batches, sizes):
        loss = loss_fn(model, (x, y))
        # Weight by the micro-batch's share of the rows; backward adds into p.grad.
        (loss * (n / total)).backward()
        loss_sum += float(loss.detach()) * n

    if max_grad_norm is not None:
        # Clip once, on the accumulated gradient: its total 2-norm over every parameter that has one.
        params = [p for p in model.parameters() if p.grad is not None]
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    optimizer.step()
    # Leave no gradient behind for whoever steps next.
    optimizer.zero_grad()
    return loss_sum / total
