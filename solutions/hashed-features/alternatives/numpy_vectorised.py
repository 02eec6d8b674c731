"""Alternative for `hashed-features`: every key of a row hashed at once, in NumPy uint64 arithmetic.

featurize encodes its keys ("name=value", a cross's joined by ";") as the rows of a zero-padded uint8
matrix and hashes them together: a polynomial hash sum(byte_i * B**(L-1-i)) mod 2**64 is one
matrix-vector product (uint64 products wrap modulo 2**64), then the mixed seed and the key's length go in
and splitmix64's finaliser spreads every bit over every other. The index is that hash modulo n_buckets,
the sign the top bit of a second finalisation. bucket hashes a single key, where one NumPy call costs
more than the whole hash, so it runs the same arithmetic on Python ints (masked to 64 bits): the two
paths agree bit for bit. expected_collisions is vectorised too: it accepts arrays of n_keys and n_buckets.
"""

import numpy as np

MASK = (1 << 64) - 1
B = 0x9E3779B97F4A7C15  # an odd 64-bit multiplier
SEED_MIX = 0xD1B54A32D192ED03
SIGN_MIX = 0x5851F42D4C957F2D


def _finalise(x):
    """splitmix64's output function, elementwise on a uint64 array (array arithmetic wraps silently)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _finalise_int(x):
    """The same on one Python int."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _mixed_seed(seed):
    return _finalise_int((seed * SEED_MIX + 1) & MASK)


_powers = np.array([pow(B, i, 1 << 64) for i in range(64)], dtype=np.uint64)  # B**i mod 2**64, grown on demand


def _powers_for(length):
    """[B**(length-1), ..., B, 1] (mod 2**64): the weights of a right-aligned key of `length` bytes."""
    global _powers
    if len(_powers) < length:
        _powers = np.array([pow(B, i, 1 << 64) for i in range(2 * length)], dtype=np.uint64)
    return _powers[length - 1::-1]


def _hash_keys(keys, seed):
    """Two uint64 hashes (for the index, for the sign) per key, for a list of str keys, all at once."""
    encoded = [key.encode("utf-8") for key in keys]
    lengths = np.array([len(e) for e in encoded], dtype=np.uint64)
    width = max(int(lengths.max(initial=0)), 1)
    matrix = np.zeros((len(encoded), width), dtype=np.uint64)
    for row, data in enumerate(encoded):
        matrix[row, width - len(data):] = np.frombuffer(data, dtype=np.uint8)  # right-aligned: leading zeros add nothing
    poly = matrix @ _powers_for(width)
    first = _finalise(_finalise(poly ^ np.uint64(_mixed_seed(seed))) + lengths)
    return first, _finalise(first ^ np.uint64(SIGN_MIX))


def _hash_one(key, seed):
    """_hash_keys's first hash of one key, on Python ints."""
    data = key.encode("utf-8")
    poly = 0
    for byte in data:
        poly = (poly * B + byte) & MASK
    return _finalise_int((_finalise_int(poly ^ _mixed_seed(seed)) + len(data)) & MASK)


def _check(n_buckets):
    if n_buckets < 1:
        raise ValueError("n_buckets must be a positive integer")


def featurize(row, fields, crosses, n_buckets, seed=0):
    _check(n_buckets)
    keys = [f"{name}={row[name]}" for name in fields] + [";".join(f"{name}={row[name]}" for name in cross) for cross in crosses]
    first, second = _hash_keys(keys, seed)
    indices = (first % np.uint64(n_buckets)).astype(np.int64)
    signs = np.where(second >> np.uint64(63), -1, 1).astype(np.int64)
    return indices, signs


def bucket(field, value, n_buckets, seed=0):
    _check(n_buckets)
    return _hash_one(f"{field}={value}", seed) % n_buckets


def expected_collisions(n_keys, n_buckets):
    n, m = np.asarray(n_keys, dtype=np.float64), np.asarray(n_buckets, dtype=np.float64)
    if np.any(n < 0) or np.any(m < 1):
        raise ValueError("need n_keys >= 0 and n_buckets >= 1")
    with np.errstate(divide="ignore", invalid="ignore"):  # m == 1: log1p(-1) = -inf, handled by the where
        in_use = np.where(m == 1, np.minimum(n, 1), -m * np.expm1(n * np.log1p(-1 / m)))
    result = n - in_use
    return float(result) if result.ndim == 0 else result
