"""NumPy throughout: the round counted in an np.int64, the losses compared as np.float64, and step's answer the
NumPy comparison itself, an np.bool_ (which `if stopper.step(loss): break` treats like True or False)."""

import numpy as np


class EarlyStopper:
    def __init__(self, patience, min_delta=0.0):
        if patience < 1 or min_delta < 0:
            raise ValueError(f"need patience >= 1 and min_delta >= 0, got {patience} and {min_delta}")
        self.patience, self.min_delta = patience, min_delta
        self.round = np.int64(-1)
        self.best_round, self.best_loss = None, np.inf

    def step(self, loss):
        self.round += 1
        loss = np.float64(loss)
        if not np.isfinite(loss):
            return np.bool_(True)
        if loss < self.best_loss - self.min_delta:
            self.best_round, self.best_loss = self.round, loss
        return self.round - self.best_round >= self.patience
