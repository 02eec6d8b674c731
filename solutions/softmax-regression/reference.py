"""Reference for `softmax-regression`: the softmax cross-entropy with its gradient, and full-batch
gradient descent on a linear softmax classifier.

The loss comes from log-probabilities, z - max - log(sum(exp(z - max))), never from log(p): a
confident mistake at logits of +-1e4 costs about 2e4, which log(p + 1e-12) would cap near 27.6.
The gradient of the mean loss with respect to the logits is (softmax - one_hot) / n.
"""

import numpy as np


def softmax_ce(logits, y):
    """(loss, grad): the mean cross-entropy of softmax(logits) against the labels y, as
    F.cross_entropy(logits, y), and its gradient d(loss)/d(logits), an (N, K) array.
    logits (N, K) float64, y (N,) int labels in 0..K-1; logits and y are not modified."""
    logits = np.asarray(logits)
    y = np.asarray(y)
    n = logits.shape[0]
    rows = np.arange(n)
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -logp[rows, y].mean()
    grad = np.exp(logp)
    grad[rows, y] -= 1
    return loss, grad / n


def train(X, y, k, lr, epochs):
    """Full-batch gradient descent on softmax(X @ W + b) from W = 0, b = 0: each epoch one step
    W -= lr * X.T @ g, b -= lr * g.sum(0), with g the gradient of softmax_ce at the current logits.
    X (N, D) float64, y (N,) int labels in 0..k-1 (some classes may be absent); returns W (D, k), b (k,)."""
    X = np.asarray(X)
    W = np.zeros((X.shape[1], k))
    b = np.zeros(k)
    for _ in range(epochs):
        _, g = softmax_ce(X @ W + b, y)
        W -= lr * X.T @ g
        b -= lr * g.sum(axis=0)
    return W, b
