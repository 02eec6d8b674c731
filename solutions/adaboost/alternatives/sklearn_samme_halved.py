"""Alternative: scikit-learn's AdaBoostClassifier (SAMME) with depth-1 trees, its estimator weights halved.

For two classes SAMME gives each tree the weight ln((1 - err) / err), twice discrete AdaBoost's
alpha, and multiplies the weights of the misclassified rows by exp(that) = (1 - err) / err. After
renormalisation that is exactly AdaBoost's update w *= exp(-alpha y h): both make the ratio of a
misclassified row's weight to a correct one's (1 - err) / err. So the trees, their errors and the
weights are AdaBoost's, and only the weights need halving: alpha = estimator_weights_ / 2. Without
the halving the margins would be twice AdaBoost's, and the weights exp(-margin) they imply would
not be the weights the trees were fitted to.

The trees are chosen by weighted Gini impurity, not by the least weighted error: the contract asks
only for a stump better than chance under the current weights. A perfect tree gets sklearn's
weight 1.0 (alpha 0.5) and ends training.
"""

import numpy as np
from sklearn.ensemble import AdaBoostClassifier
from sklearn.tree import DecisionTreeClassifier


def fit(X, y, rounds):
    model = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=1), n_estimators=rounds, random_state=0)
    model.fit(np.asarray(X, dtype=np.float64), np.asarray(y))
    stumps = list(model.estimators_)
    alphas = model.estimator_weights_[:len(stumps)] / 2
    return stumps, alphas


def margins(X, y, stumps, alphas):
    X = np.asarray(X, dtype=np.float64)
    score = np.zeros(len(X))
    for tree, alpha in zip(stumps, alphas):
        score += alpha * np.where(tree.predict(X) > 0, 1.0, -1.0)
    return np.asarray(y, dtype=np.float64) * score
