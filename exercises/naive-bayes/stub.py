"""Multinomial Naive Bayes from scratch. Fill in the class; run `mlprep grade naive-bayes` to grade it."""

import numpy as np


class MultinomialNB:
    """Multinomial Naive Bayes for count data (word counts of documents, say).

    MultinomialNB(alpha=1.0): alpha > 0 is the additive smoothing added to every feature count of
    every class, so a feature never seen in a class's training documents does not zero that class.
    fit(X, y) learns from X (N, V) non-negative counts and y (N,) labels (integers or strings) and
    returns self. The classes are np.unique(y), in that (sorted) order."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        """Learn log P(class) from the share of training documents in each class, and log P(feature | class)
        from the class's feature counts plus alpha over its total count plus alpha * V. Returns self."""
        raise NotImplementedError("fit: per class, count the documents and sum the feature counts; smooth; take logs")

    def predict_log_proba(self, X):
        """(N, K) float64 log P(class | document), columns in the order of self.classes_; each row
        log-sum-exps to 0."""
        raise NotImplementedError("predict_log_proba: joint log-likelihoods, minus each row's log-sum-exp")

    def predict(self, X):
        """The most probable class of each row of X, as labels of y's kind (a 1-D array)."""
        raise NotImplementedError("predict: the class with the largest joint log-likelihood")
