"""Reference for `early-stopping`: patience on a validation loss, as Keras's and Lightning's callbacks count it.

A round improves when its loss beats the best so far by more than min_delta (an absolute margin:
loss < best_loss - min_delta); each round that does not improve adds one to a counter, which an
improvement resets, and the run stops when the counter reaches patience, that is at round
best_round + patience. A loss that is NaN or infinite stops the run at once: training diverged,
and no later round can be compared with it.
"""

import math


class EarlyStopper:
    """Call step(loss) once per round (rounds counted from 0); it returns True when training should
    stop. best_round and best_loss are the round and value of the best loss so far."""

    def __init__(self, patience, min_delta=0.0):
        if patience < 1:
            raise ValueError(f"patience must be at least 1 round, got {patience}")
        if min_delta < 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta}")
        self.patience = patience
        self.min_delta = min_delta
        self.best_loss = math.inf
        self.best_round = None
        self._round = -1
        self._wait = 0  # rounds since the last improvement

    def step(self, loss):
        self._round += 1
        if not math.isfinite(loss):
            return True
        if loss < self.best_loss - self.min_delta:
            self.best_loss = loss
            self.best_round = self._round
            self._wait = 0
            return False
        self._wait += 1
        return self._wait >= self.patience
