"""Gradient accumulation: one optimizer step from several micro-batches.

Fill in accumulate_step. The contract is in the docstring; `mlprep show grad-accumulation` shows
the whole task.
"""

import torch


def accumulate_step(model, loss_fn, micro_batches, optimizer, max_grad_norm=None):
    """One optimizer step whose gradient is that of one big batch made of all the micro-batches.

    model: an nn.Module; optimizer: a torch optimizer over model.parameters().
    micro_batches: a non-empty list of (x, y) pairs; a micro-batch's size is x.shape[0] (the
        last one may be smaller). An empty list raises ValueError.
    loss_fn(model, batch): the MEAN loss of one batch (an (x, y) pair) as a scalar tensor.

    Discard any gradient present on entry; accumulate the gradient of the mean loss over all the
    rows (each micro-batch weighted by its size); if max_grad_norm is given, clip the accumulated
    gradient's total 2-norm over every parameter that has a gradient to max_grad_norm (as
    torch.nn.utils.clip_grad_norm_); call optimizer.step() exactly once; leave every p.grad None
    or zero. The return value is up to you (the mean loss, say); it is not graded.
    """
    raise NotImplementedError("accumulate_step")
