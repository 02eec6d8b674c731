"""History-based: keep every loss and re-derive the best round from the whole history at each step
(no counter), stopping once the current round is patience rounds past it."""

import math


class EarlyStopper:
    def __init__(self, patience, min_delta=0.0):
        if patience < 1 or min_delta < 0:
            raise ValueError("need patience >= 1 and min_delta >= 0")
        self.patience, self.min_delta = patience, min_delta
        self.history = []
        self.best_round, self.best_loss = None, float("inf")

    def _best(self):
        best_round, best_loss = None, float("inf")
        for t, loss in enumerate(self.history):
            if loss + self.min_delta < best_loss:  # the same test as loss < best_loss - min_delta
                best_round, best_loss = t, loss
        return best_round, best_loss

    def step(self, loss):
        if math.isnan(loss) or math.isinf(loss):
            return True
        self.history.append(loss)
        self.best_round, self.best_loss = self._best()
        return len(self.history) - 1 - self.best_round >= self.patience
