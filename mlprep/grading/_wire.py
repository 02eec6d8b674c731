"""Plain-data messages between the judge and the sandbox.

The sandbox runs untrusted code, so what it sends back is decoded without unpickling anything:
a JSON tree plus raw buffers, and only these types come out: None, bool, int, float, str,
list, tuple, dict, NumPy arrays and scalars of numeric dtypes, torch tensors (rebuilt on the CPU,
or on the device asked for), and `Opaque` placeholders for anything else.

Layout of one message: 8-byte length of the JSON header, the header, then the buffers back to back.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# NumPy dtypes allowed over the wire. bfloat16 has no NumPy dtype: its bits travel as uint16.
_NUMPY_DTYPES = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}
_TORCH_DTYPES = _NUMPY_DTYPES | {"bfloat16"}
MAX_MESSAGE_BYTES = 1 << 31


@dataclass(frozen=True)
class Opaque:
    """Something the learner returned that is not plain data (an object, a function, a module)."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return f"<{self.type_name} object: {self.text}>"


class WireError(ValueError):
    pass


def _torch():
    import torch

    return torch


def make_encoder() -> Callable[[Any], bytes]:
    """An encoder whose every part is bound now: the sandbox makes its own before the learner's code is
    imported, so that what that code replaces afterwards (numpy's or torch's functions, json, the builtins,
    this module's names) does not change what the sandbox sends. (Rewriting the encoder's own closure, or
    memory, is sabotage no Python process can prevent: the judge decides from the values it receives.)"""
    import builtins

    import numpy

    dumps, pack, isfinite = json.dumps, struct.pack, math.isfinite
    isinstance_, type_, repr_, len_, list_, str_, int_, float_, bool_, dict_, tuple_ = (
        builtins.isinstance, builtins.type, builtins.repr, builtins.len, builtins.list, builtins.str, builtins.int, builtins.float, builtins.bool,
        builtins.dict, builtins.tuple)
    BaseException_ = builtins.BaseException
    np_asarray, np_ndarray, np_generic = numpy.asarray, numpy.ndarray, numpy.generic
    bound_torch: list[Any] = [sys.modules.get("torch")]

    def torch_module() -> Any:
        if bound_torch[0] is None:
            bound_torch[0] = _torch()  # imported only when a tensor is encoded: after the learner's code, but by its real name's module
        return bound_torch[0]

    def to_tree(obj: Any, buffers: list[bytes], depth: int) -> Any:
        if depth > 64:
            return {"O": ["nesting", "nested more than 64 levels deep"]}
        module = type_(obj).__module__
        if module == "numpy" or module.startswith("numpy."):
            if isinstance_(obj, (np_ndarray, np_generic)) and obj.dtype.name in _NUMPY_DTYPES:
                arr = np_asarray(obj)
                if not arr.flags.c_contiguous:
                    arr = arr.copy(order="C")
                buffers.append(arr.tobytes())
                return {"A" if isinstance_(obj, np_ndarray) else "S": len_(buffers) - 1, "dtype": arr.dtype.name, "shape": list_(arr.shape)}
        if obj is None or isinstance_(obj, (bool_, str_)):
            return obj
        if isinstance_(obj, int_):
            return obj if -(2**63) <= obj < 2**64 else {"O": ["int", f"{obj:.3e}"]}
        if isinstance_(obj, float_):
            return {"f": repr_(obj)} if not isfinite(obj) else obj
        if isinstance_(obj, (list_, tuple_)):
            items = [to_tree(x, buffers, depth + 1) for x in obj]
            return {"L": items} if isinstance_(obj, list_) else {"T": items}
        if isinstance_(obj, dict_):
            return {"D": [[to_tree(k, buffers, depth + 1), to_tree(v, buffers, depth + 1)] for k, v in obj.items()]}
        if module == "torch" or module.startswith("torch."):
            torch = torch_module()
            if isinstance_(obj, torch.Tensor):
                dtype = str_(obj.dtype).removeprefix("torch.")
                if dtype in _TORCH_DTYPES and obj.layout == torch.strided:
                    tensor = obj.detach().cpu().contiguous()
                    if dtype == "bfloat16":
                        tensor = tensor.view(torch.uint16) if hasattr(torch, "uint16") else tensor.view(torch.int16)
                    buffers.append(tensor.numpy().tobytes())
                    return {"P": len_(buffers) - 1, "dtype": dtype, "shape": list_(obj.shape), "device": str_(obj.device),
                            "requires_grad": bool_(obj.requires_grad)}
            if isinstance_(obj, torch.dtype):
                return {"O": ["torch.dtype", str_(obj)]}
        try:
            text = repr_(obj)[:200]
        except BaseException_:  # a hostile __repr__ must not break the message
            text = "<repr failed>"
        return {"O": [type_(obj).__qualname__[:100], text]}

    def encode(obj: Any) -> bytes:
        buffers: list[bytes] = []
        header = dumps(to_tree(obj, buffers, 0), allow_nan=True).encode()
        return pack("<Q", len_(header)) + header + b"".join(buffers)

    return encode


encode = make_encoder()


def decode(data: bytes, *, tensor_device: str | None = None) -> Any:
    """Rebuild plain data. Tensors land on `tensor_device` (default: the CPU). Decoded without a
    tensor_device (the judge's side), a tensor that lived on another device says which in its
    `origin_device` attribute (see `origin_device`)."""
    if len(data) < 8:
        raise WireError("truncated message")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise WireError("truncated header")
    try:
        tree = json.loads(data[8 : 8 + header_len])
    except ValueError as exc:
        raise WireError(f"bad header: {exc}") from None
    buffers = _split_buffers(data[8 + header_len :], tree)
    return _from_tree(tree, buffers, tensor_device)


def origin_device(value: Any) -> str:
    """The device a tensor lived on before it crossed the wire ("cpu" for anything else)."""
    return str(getattr(value, "origin_device", None) or getattr(value, "device", "cpu"))


def _split_buffers(blob: bytes, tree: Any) -> list[bytes]:
    # Buffer sizes follow from dtype and shape, which the header states; recompute and slice.
    sizes: dict[int, int] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for kind in ("A", "S", "P"):
                if kind in node:
                    sizes[node[kind]] = _nbytes(node["dtype"], node["shape"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    buffers, offset = [], 0
    blob_view = memoryview(blob)
    for index in range(len(sizes)):
        if index not in sizes:
            raise WireError("buffer index gap")
        size = sizes[index]
        buffers.append(bytes(blob_view[offset : offset + size]))
        offset += size
    if offset != len(blob):
        raise WireError("buffer sizes do not add up")
    return buffers


def _nbytes(dtype: str, shape: list[int]) -> int:
    if dtype not in _TORCH_DTYPES or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise WireError(f"bad array header {dtype!r} {shape!r}")
    itemsize = 2 if dtype == "bfloat16" else _numpy_itemsize(dtype)
    return itemsize * math.prod(shape)


def _numpy_itemsize(dtype: str) -> int:
    import numpy as np

    return np.dtype(dtype).itemsize


def _from_tree(node: Any, buffers: list[bytes], tensor_device: str | None) -> Any:
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        raise WireError("bare list in tree")
    if not isinstance(node, dict) or not node:
        raise WireError("bad node")
    if "f" in node:
        return float(node["f"])
    if "L" in node:
        return [_from_tree(x, buffers, tensor_device) for x in node["L"]]
    if "T" in node:
        return tuple(_from_tree(x, buffers, tensor_device) for x in node["T"])
    if "D" in node:
        return {_from_tree(k, buffers, tensor_device): _from_tree(v, buffers, tensor_device) for k, v in node["D"]}
    if "O" in node:
        type_name, text = node["O"]
        return Opaque(str(type_name), str(text))
    if "A" in node or "S" in node:
        import numpy as np

        arr = np.frombuffer(buffers[node.get("A", node.get("S"))], dtype=node["dtype"]).reshape(node["shape"]).copy()
        return arr if "A" in node else arr[()]
    if "P" in node:
        import numpy as np

        torch = _torch()
        raw = buffers[node["P"]]
        if node["dtype"] == "bfloat16":
            t = torch.from_numpy(np.frombuffer(raw, dtype=np.uint16).copy().view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.frombuffer(raw, dtype=node["dtype"]).copy())
        t = t.reshape(node["shape"])
        if tensor_device is None and node.get("device", "cpu") != "cpu":
            t.origin_device = str(node["device"])
        if tensor_device is not None and tensor_device != "cpu":
            t = t.to(tensor_device)
        if node.get("requires_grad") and t.is_floating_point() and tensor_device is not None:
            t.requires_grad_(True)
        return t
    raise WireError(f"unknown node {sorted(node)[:3]}")
