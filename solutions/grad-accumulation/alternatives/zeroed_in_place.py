"""The pseudocode of the source, corrected for uneven micro-batches: zero the gradients in place
(set_to_none=False), weight each mean loss by its share of the rows, clip, step, zero again."""

import torch


def accumulate_step(model, loss_fn, micro_batches, optimizer, max_grad_norm=None):
    if not micro_batches:
        raise ValueError("accumulate_step: micro_batches must not be empty")
    total_rows = sum(len(x) for x, _ in micro_batches)
    model.zero_grad(set_to_none=False)  # grads become 0 where they exist; None stays None
    total_loss = torch.zeros(())
    for batch in micro_batches:
        rows = len(batch[0])
        loss = loss_fn(model, batch) * rows / total_rows
        loss.backward()
        total_loss = total_loss + loss.detach().cpu()
    if max_grad_norm is not None:
        # clip_grad_norm_ skips parameters whose grad is None.
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=max_grad_norm)
    optimizer.step()
    model.zero_grad(set_to_none=False)
    return total_loss
