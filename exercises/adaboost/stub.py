"""AdaBoost with decision stumps, labels -1/+1. Fill in `fit` and `margins`; run `mlprep grade adaboost` to grade it."""

import numpy as np


def fit(X, y, rounds):
    """Discrete AdaBoost with decision stumps. X: (n, d) float array; y: (n,) labels -1/+1;
    rounds >= 1. Returns (stumps, alphas): two sequences of equal length between 1 and rounds,
    every alpha finite and > 0. Round t fits a stump to the weights w_i proportional to
    exp(-margin_i) of the stumps so far (renormalised to sum to 1), and gives it
    alpha_t = 0.5 ln((1 - err_t) / err_t), err_t its weighted error. A perfect stump (err_t = 0)
    gets a finite alpha and ends training (or its err is capped); it never divides by zero."""
    raise NotImplementedError("fit: weights 1/n; each round the stump of least weighted error, alpha = 0.5 ln((1 - err) / err), reweight and renormalise")


def margins(X, y, stumps, alphas):
    """(n,) float64 y * sum_t alpha_t h_t(x), unnormalised, for any X (training rows or new ones) and
    any slice of stumps with the matching alphas; h_t(x) is -1 or +1."""
    raise NotImplementedError("margins: y * sum(alpha_t * h_t(X)) over the stumps given")
