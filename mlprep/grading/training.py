"""Training runs as plain data, sandbox side: what a model, an optimizer and a scheduler hold, snapshotted
inside a scenario as detached CPU copies (safe to send back, compared bit for bit in the judge), and how
far the parameters moved.

    before = parameters_of(model)
    module.train(model, data)
    return {"moved": largest_change(before, parameters_of(model)), "state": state_of(model, optimizer, scheduler)}
"""

from __future__ import annotations

import math
from typing import Any, Sequence


def _copy(value: Any) -> Any:
    return value.detach().cpu().clone() if hasattr(value, "detach") else value


def parameters_of(model: Any) -> list:
    """The model's parameters, in order, as detached CPU copies."""
    return [_copy(p) for p in model.parameters()]


def optimizer_state(optimizer: Any) -> list[dict]:
    """Per parameter, in the order of the optimizer's param groups: its state (Adam's exp_avg, exp_avg_sq and
    step, SGD's momentum_buffer...), tensors as CPU copies; {} for a parameter that has none yet."""
    return [{key: _copy(value) for key, value in optimizer.state.get(p, {}).items()} for group in optimizer.param_groups for p in group["params"]]


def state_of(model: Any, optimizer: Any = None, scheduler: Any = None) -> dict:
    """"model": the state_dict (parameters and buffers) as CPU copies; with an optimizer, "optimizer" (optimizer_state)
    and "lr" (each param group's learning rate); with a scheduler, "scheduler": its last_epoch and get_last_lr()."""
    state: dict[str, Any] = {"model": {name: _copy(value) for name, value in model.state_dict().items()}}
    if optimizer is not None:
        state.update(optimizer=optimizer_state(optimizer), lr=[group["lr"] for group in optimizer.param_groups])
    if scheduler is not None:
        state["scheduler"] = {"last_epoch": scheduler.last_epoch, "last_lr": list(scheduler.get_last_lr())}
    return state


def largest_change(before: Sequence[Any], after: Sequence[Any]) -> float:
    """The largest absolute change of any entry between two snapshots of the same tensors: 0.0 for none, NaN
    where an entry became (or was) NaN."""
    changes = [float((a.detach().cpu().double() - b.detach().cpu().double()).abs().max()) for b, a in zip(before, after) if a.numel()]
    return math.nan if any(math.isnan(c) for c in changes) else max(changes, default=0.0)
