"""Round arithmetic instead of a counter: remember the round of the best loss and stop when the
current round is patience rounds past it; an improvement is best_loss - loss > min_delta."""


class EarlyStopper:
    def __init__(self, patience, min_delta=0.0):
        if not patience >= 1:
            raise ValueError("patience must be >= 1")
        if not min_delta >= 0:
            raise ValueError("min_delta must be >= 0")
        self.patience = patience
        self.min_delta = min_delta
        self.rounds = 0
        self.best_round = None
        self.best_loss = None

    def step(self, loss):
        t = self.rounds
        self.rounds += 1
        if loss != loss or loss in (float("inf"), float("-inf")):
            return True
        if self.best_loss is None or self.best_loss - loss > self.min_delta:
            self.best_round, self.best_loss = t, loss
        return t - self.best_round >= self.patience
