"""Alternative for `hashed-features`: MurmurHash3 (x86, 32-bit) written out by hand, with its seed.

MurmurHash3_x86_32 over the key's UTF-8 bytes, the exercise's seed as Murmur's own 32-bit seed: blocks
of 4 bytes mixed with c1, c2 and rotations, the tail, the length, then fmix32. The index is the hash
modulo n_buckets (32 bits cover n_buckets <= 2**31); the sign is the top bit of a second hash, of the
key with "#sign" appended, so it shares no bits with the index. A cross's key is its fields' keys joined
by "|". expected_collisions sums the series C(n, 2)/m - C(n, 3)/m^2 + ... while n is small against m,
where the closed form would cancel, and uses the closed form otherwise.
"""

import math

import numpy as np

MASK = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & MASK


def murmur3_32(data, seed):
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & MASK
    n_blocks = len(data) // 4
    for i in range(n_blocks):
        k = int.from_bytes(data[4 * i: 4 * i + 4], "little")
        k = _rotl((k * c1) & MASK, 15)
        h ^= (k * c2) & MASK
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & MASK
    tail = data[4 * n_blocks:]
    k = 0
    for i, byte in enumerate(tail):
        k |= byte << (8 * i)
    if tail:
        k = _rotl((k * c1) & MASK, 15)
        h ^= (k * c2) & MASK
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK
    return h ^ (h >> 16)


def _key(names, row):
    return "|".join(f"{name}={row[name]}" for name in names)


def _check(n_buckets):
    if n_buckets < 1:
        raise ValueError(f"n_buckets must be >= 1, not {n_buckets}")


def bucket(field, value, n_buckets, seed=0):
    _check(n_buckets)
    return murmur3_32(f"{field}={value}".encode("utf-8"), seed) % n_buckets


def featurize(row, fields, crosses, n_buckets, seed=0):
    _check(n_buckets)
    keys = [_key((name,), row) for name in fields] + [_key(cross, row) for cross in crosses]
    indices = np.zeros(len(keys), dtype=np.int64)
    signs = np.ones(len(keys), dtype=np.float64)
    for i, key in enumerate(keys):
        indices[i] = murmur3_32(key.encode("utf-8"), seed) % n_buckets
        if murmur3_32((key + "#sign").encode("utf-8"), seed) >> 31:
            signs[i] = -1.0
    return indices, signs


def expected_collisions(n_keys, n_buckets):
    if n_keys < 0:
        raise ValueError("n_keys must be >= 0")
    _check(n_buckets)
    n, m = n_keys, n_buckets
    if n < 2:
        return 0.0
    if m == 1:
        return float(n - 1)
    if n > m / 100:
        return n + m * math.expm1(n * math.log1p(-1 / m))
    total, term, k = 0.0, n * (n - 1) / (2 * m), 2
    while abs(term) > 1e-17 * total:
        total += term
        term *= -(n - k) / ((k + 1) * m)
        k += 1
    return total
