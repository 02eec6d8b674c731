"""The training family of the toolkit (mlprep.grading.training): snapshots of a model, an optimizer and a
scheduler as plain data, and how far parameters moved."""

import math

import torch

from mlprep.grading import largest_change, optimizer_state, parameters_of, state_of


def _run():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 1))
    unused = torch.nn.Parameter(torch.zeros(2))  # in the optimizer, never given a gradient: no state
    optimizer = torch.optim.Adam([*model.parameters(), unused], lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    return model, optimizer, scheduler


def test_snapshots_are_detached_copies_that_later_training_does_not_touch():
    model, optimizer, scheduler = _run()
    before, state_before = parameters_of(model), optimizer_state(optimizer)
    assert all(not p.requires_grad and p.device.type == "cpu" for p in before)
    assert state_before == [{}] * 7  # nothing stepped yet
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
    scheduler.step()
    after = parameters_of(model)
    assert largest_change(before, before) == 0.0 and largest_change([], []) == 0.0
    assert 0.0 < largest_change(before, after) <= 0.1 + 1e-6  # Adam's first step moves each entry by at most lr
    state = optimizer_state(optimizer)
    assert set(state[0]) == {"step", "exp_avg", "exp_avg_sq"} and state[-1] == {}
    state[0]["exp_avg"].add_(1.0)  # a copy: the optimizer's own state is untouched
    assert not torch.equal(state[0]["exp_avg"], optimizer.state[next(model.parameters())]["exp_avg"])


def test_state_of_holds_buffers_learning_rates_and_the_scheduler_count():
    model, optimizer, scheduler = _run()
    assert set(state_of(model)) == {"model"}
    optimizer.step()  # no gradients yet: nothing moves, but the scheduler may count
    scheduler.step()
    state = state_of(model, optimizer, scheduler)
    assert "1.running_mean" in state["model"] and state["lr"] == [0.05]
    assert state["scheduler"] == {"last_epoch": 1, "last_lr": [0.05]}


def test_a_parameter_that_became_nan_counts_as_moved_by_nan():
    a = [torch.zeros(2)]
    assert math.isnan(largest_change(a, [torch.tensor([0.0, math.nan])]))
