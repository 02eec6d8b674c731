"""Multinomial Naive Bayes over count features, with additive (Laplace) smoothing, computed in log space."""

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
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        in_class = y[:, None] == self.classes_[None, :]  # (N, K) one-hot
        counts = in_class.T.astype(np.float64) @ X  # (K, V): each feature's count over the class's documents
        smoothed = counts + self.alpha
        self.feature_log_prob_ = np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))
        documents = in_class.sum(axis=0)  # the prior counts documents, not tokens
        self.class_log_prior_ = np.log(documents) - np.log(documents.sum())
        return self

    def _joint_log_likelihood(self, X):
        # Sums of log-probabilities: a product of 5,000 probabilities underflows to 0.
        return np.asarray(X, dtype=np.float64) @ self.feature_log_prob_.T + self.class_log_prior_

    def predict_log_proba(self, X):
        """(N, K) float64 log P(class | document), columns in the order of self.classes_; each row
        log-sum-exps to 0."""
        jll = self._joint_log_likelihood(X)
        top = jll.max(axis=1, keepdims=True)
        log_evidence = top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True))  # log-sum-exp, shifted by the row maximum
        return jll - log_evidence

    def predict(self, X):
        """The most probable class of each row of X, as labels of y's kind (a 1-D array)."""
        return self.classes_[np.argmax(self._joint_log_likelihood(X), axis=1)]
