"""Early stopping on a validation loss (pure Python). Fill in EarlyStopper; run `mlprep grade early-stopping` to grade it."""


class EarlyStopper:
    """Decides, round by round, when to stop training (boosting rounds, epochs).

    EarlyStopper(patience, min_delta=0.0): patience is an int >= 1, min_delta a float >= 0 (an
    absolute margin); patience < 1 or min_delta < 0 raises ValueError.

    step(loss) is called once per round with that round's validation loss (a float or int); rounds
    are counted from 0. A round improves when loss < best_loss - min_delta (the first finite loss
    always does). step returns True (stop) when patience rounds in a row have not improved, that is at
    round best_round + patience, and at once for a NaN, inf or -inf loss; otherwise False.

    Attributes, read after each step: best_round (the 0-based round of the best loss) and best_loss
    (that loss). A NaN or infinite loss changes neither. Their values before the first finite loss
    are not graded.
    """

    def __init__(self, patience, min_delta=0.0):
        raise NotImplementedError("EarlyStopper: validate and remember patience and min_delta; nothing seen yet")

    def step(self, loss):
        raise NotImplementedError("step: stop on a non-finite loss; update the best on an improvement; stop after patience rounds without one")
