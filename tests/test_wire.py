"""The plain-data channel: round trips, and nothing but plain data comes out of the decoder."""

import math
import struct

import numpy as np
import pytest
import torch

from mlprep.grading._wire import Opaque, WireError, decode, encode


def roundtrip(obj):
    return decode(encode(obj))


def test_python_values_round_trip():
    value = {"a": [1, 2.5, None, True, "s"], "b": (1, (2, 3)), 3: -(2**62)}
    assert roundtrip(value) == value
    assert isinstance(roundtrip((1, 2)), tuple) and isinstance(roundtrip([1, 2]), list)


def test_non_finite_floats_survive():
    out = roundtrip([math.inf, -math.inf, math.nan])
    assert out[0] == math.inf and out[1] == -math.inf and math.isnan(out[2])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64, np.bool_, np.uint8])
def test_numpy_arrays_and_scalars(dtype):
    arr = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    out = roundtrip(arr)
    assert out.dtype == arr.dtype and out.shape == arr.shape and np.array_equal(out, arr)
    scalar = roundtrip(arr.reshape(-1)[5])
    assert isinstance(scalar, np.generic) and scalar.dtype == arr.dtype and scalar == arr.reshape(-1)[5]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_tensors_keep_dtype_and_values(dtype):
    t = torch.linspace(-3, 3, 10).reshape(2, 5).to(dtype)
    out = roundtrip(t)
    assert out.dtype == t.dtype and out.shape == t.shape and torch.equal(out, t)


def test_non_contiguous_and_grad_tensors():
    t = torch.arange(12.0, requires_grad=True).reshape(3, 4).t()
    out = roundtrip(t)
    assert torch.equal(out, t.detach()) and not out.requires_grad  # the judge gets values only


def test_objects_become_opaque_placeholders():
    class Weird:
        def __repr__(self):
            raise RuntimeError("hostile repr")

    out = roundtrip([Weird(), print])
    assert all(isinstance(o, Opaque) for o in out)
    assert out[0].type_name.endswith("Weird")


@pytest.mark.parametrize("payload", [b"", b"\x01\x00", struct.pack("<Q", 999) + b"{}", struct.pack("<Q", 2) + b"[1"])
def test_garbage_is_rejected(payload):
    with pytest.raises(WireError):
        decode(payload)


def test_header_with_inconsistent_buffer_sizes_is_rejected():
    data = encode(np.zeros(4))
    with pytest.raises(WireError):
        decode(data + b"extra")
    with pytest.raises(WireError):
        decode(data[:-3])


def test_disallowed_dtype_is_rejected():
    header = b'{"A": 0, "dtype": "object", "shape": [1]}'
    with pytest.raises(WireError):
        decode(struct.pack("<Q", len(header)) + header + b"\x00" * 8)
