"""Alternative for `hashed-features`: hashlib's MD5 of the seed, the field names and the values.

The key is the seed's decimal text, then "name=value" for each field of the feature, joined by NUL bytes
(a single field or a cross alike), so the seed is hashed with the key rather than added to anything.
One 16-byte digest serves both numbers: its first 8 bytes (big-endian, unsigned) reduced modulo
n_buckets give the index, the top bit of its last byte the sign. MD5 is broken for security, not for
spreading keys evenly. expected_collisions: the chance that a given bucket stays empty is
(1 - 1/m)^n = exp(n log1p(-1/m)), so m(1 - that) buckets are in use, with 1 - exp(x) as -expm1(x): the
subtraction n - m + m(1 - 1/m)^n would lose the digits of a small result in large tables.
"""

import hashlib
import math

import numpy as np


def _digest(seed, pairs):
    text = "\0".join([str(seed)] + [f"{name}={value}" for name, value in pairs])
    return hashlib.md5(text.encode("utf-8")).digest()


def _index_and_sign(digest, n_buckets):
    return int.from_bytes(digest[:8], "big") % n_buckets, -1 if digest[15] & 0x80 else 1


def bucket(field, value, n_buckets, seed=0):
    if n_buckets < 1:
        raise ValueError("n_buckets must be >= 1")
    return _index_and_sign(_digest(seed, [(field, value)]), n_buckets)[0]


def featurize(row, fields, crosses, n_buckets, seed=0):
    if n_buckets < 1:
        raise ValueError("n_buckets must be >= 1")
    features = [[(name, row[name])] for name in fields] + [[(name, row[name]) for name in cross] for cross in crosses]
    pairs = [_index_and_sign(_digest(seed, feature), n_buckets) for feature in features]
    indices = np.array([index for index, _ in pairs], dtype=np.int64).reshape(-1)
    signs = np.array([sign for _, sign in pairs], dtype=np.int8).reshape(-1)
    return indices, signs


def expected_collisions(n_keys, n_buckets):
    if n_keys < 0 or n_buckets < 1:
        raise ValueError("need n_keys >= 0 and n_buckets >= 1")
    if n_keys == 0 or n_buckets == 1:
        return float(max(n_keys - 1, 0))
    log_empty = n_keys * math.log1p(-1 / n_buckets)  # log of the chance that one bucket stays empty
    return float(n_keys + n_buckets * math.expm1(log_empty))
