"""Reference for `hashed-features`: the hashing trick for high-cardinality ids and their crosses.

A feature's key is its field name and its value's text, "user=7" (a cross joins its fields' keys with
the unit separator "\\x1f": "user=7\\x1fad=42"), encoded as UTF-8. BLAKE2b hashes it with the seed as its
salt into 16 bytes: the first 8 (an unsigned 64-bit integer) give the bucket, h % n_buckets, the last 8
the sign, so the sign is independent of the bucket. Nothing depends on the process (Python's own
hash() of a str is salted per process) nor on what was hashed before (no vocabulary).

expected_collisions is n - m(1 - (1 - 1/m)^n), with 1 - (1 - 1/m)^n written as -expm1(n log1p(-1/m)):
the textbook form loses every digit once 1/m is below float64's resolution around 1.
"""

import hashlib
import math

import numpy as np

CROSS_SEPARATOR = "\x1f"  # cannot occur in a field name (an identifier), so a cross's key is unambiguous


def _check_buckets(n_buckets):
    if n_buckets < 1:
        raise ValueError(f"n_buckets must be at least 1, got {n_buckets}")


def _key(field, value):
    """The text hashed for one field: its name and its value's text, str(value), so 7 and "7" are one value."""
    return f"{field}={value}"


def _hash(key, seed):
    """(an unsigned 64-bit integer for the bucket, another for the sign) of the key, salted with the seed."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=16, salt=seed.to_bytes(16, "little")).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


def _index(h, n_buckets):
    return h % n_buckets


def bucket(field, value, n_buckets, seed=0):
    """The bucket of `value` in the field named `field`: an int in [0, n_buckets), the same in every
    process and on every machine, for each seed an independent hashing. Raises ValueError when
    n_buckets < 1."""
    _check_buckets(n_buckets)
    h, _ = _hash(_key(field, value), seed)
    return _index(h, n_buckets)


def featurize(row, fields, crosses, n_buckets, seed=0):
    """The hashed features of one row (a dict from field names to values): one per field of `fields`,
    then one per cross of `crosses` (tuples of field names), as (indices, signs), two int64 arrays of
    length len(fields) + len(crosses). A field's index is bucket(field, row[field], n_buckets, seed); a
    cross is hashed from its fields' names and values together; each sign is +1 or -1, independent of
    the index. Raises ValueError when n_buckets < 1."""
    _check_buckets(n_buckets)
    keys = [_key(field, row[field]) for field in fields]
    keys += [CROSS_SEPARATOR.join(_key(field, row[field]) for field in cross) for cross in crosses]
    hashes = [_hash(key, seed) for key in keys]
    indices = np.array([_index(h, n_buckets) for h, _ in hashes], dtype=np.int64)
    signs = np.array([1 - 2 * (s & 1) for _, s in hashes], dtype=np.int64)
    return indices, signs


def expected_collisions(n_keys, n_buckets):
    """The expected number of keys that land in a bucket an earlier key already holds, when n_keys
    distinct keys are hashed uniformly and independently into n_buckets buckets: n - m(1 - (1 - 1/m)^n),
    n_keys minus the expected number of buckets in use. Raises ValueError when n_keys < 0 or
    n_buckets < 1."""
    if n_keys < 0:
        raise ValueError(f"n_keys must be at least 0, got {n_keys}")
    _check_buckets(n_buckets)
    if n_keys == 0:
        return 0.0
    if n_buckets == 1:
        return float(n_keys - 1)
    in_use = -n_buckets * math.expm1(n_keys * math.log1p(-1.0 / n_buckets))
    return float(n_keys - in_use)
