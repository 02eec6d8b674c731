"""The hashing trick for high-cardinality ids and their crosses. Fill in the three functions; run
`mlprep grade hashed-features` to grade them."""

import numpy as np


def bucket(field, value, n_buckets, seed=0):
    """The bucket of `value` in the field named `field`: an int in [0, n_buckets), a function of (field,
    value, seed) alone, the same in every process and on every machine. The key is the field name and the
    value's text, str(value) (7 and "7" are one value); each seed is an independent hashing. Raises
    ValueError when n_buckets < 1."""
    raise NotImplementedError("bucket: hash the key 'field=value' with a stable hash (hashlib), seeded, modulo n_buckets")


def featurize(row, fields, crosses, n_buckets, seed=0):
    """The hashed features of `row` (a dict from field names to values): one per field of `fields`, then
    one per cross of `crosses` (tuples of field names), as (indices, signs), two 1-D NumPy arrays of length
    len(fields) + len(crosses). A field's index is bucket(field, row[field], n_buckets, seed); a cross is
    hashed from its fields' names and values together, never from their buckets; each sign is +1 or -1,
    independent of the index. Raises ValueError when n_buckets < 1."""
    raise NotImplementedError("featurize: one key per field and per cross, each hashed to an index and a sign")


def expected_collisions(n_keys, n_buckets):
    """The expected number of keys that land in a bucket an earlier key already holds, when n_keys distinct
    keys are hashed uniformly and independently into n_buckets buckets: n - m(1 - (1 - 1/m)^n). Raises
    ValueError when n_keys < 0 or n_buckets < 1."""
    raise NotImplementedError("expected_collisions: n_keys minus the expected number of buckets in use")
