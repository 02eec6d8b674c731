"""Alternative: a thin wrapper of sklearn.naive_bayes.MultinomialNB, the library's own implementation."""

from sklearn.naive_bayes import MultinomialNB as _SklearnMultinomialNB


class MultinomialNB:
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        self._model = _SklearnMultinomialNB(alpha=self.alpha).fit(X, y)
        self.classes_ = self._model.classes_
        return self

    def predict_log_proba(self, X):
        return self._model.predict_log_proba(X)

    def predict(self, X):
        return self._model.predict(X)
