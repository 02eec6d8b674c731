"""The sandbox: the only process that ever runs the learner's code.

It imports the grader (for its scenario functions), caps its own memory, imports the submission,
then answers requests from the judge: call a learner function, or run a grader scenario on the
learner's module. Everything it sends back is plain data (see _wire); it decides nothing.

Runs in a child forked by the fork server (_forkserver), which has already imported numpy, torch and
the grader: `serve(config, fd_in, fd_out)`.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import resource
import struct
import sys
import traceback
from typing import Any

import mlprep.grading._wire as _wire
from mlprep.grading._files import load_module as _load_module  # the grader comes loaded by the fork server

# Bound now, before the learner's code can replace them.
_os_read, _os_write = os.read, os.write
_encode, _decode = _wire.encode, _wire.decode


def _read_exact(fd: int, n: int) -> bytes:
    chunks, remaining = [], n
    while remaining:
        chunk = _os_read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int) -> Any:
    (size,) = struct.unpack("<Q", _read_exact(fd, 8))
    return _decode(_read_exact(fd, size), tensor_device="cpu")


def _send(fd: int, obj: Any) -> None:
    data = _encode(obj)
    data = struct.pack("<Q", len(data)) + data
    view = memoryview(data)
    while view:
        written = _os_write(fd, view)
        view = view[written:]


def _to_device(obj: Any, device: str) -> Any:
    """Move every tensor in the arguments to the device this request runs on."""
    if device == "cpu":
        return obj
    if isinstance(obj, list):
        return [_to_device(x, device) for x in obj]
    if isinstance(obj, tuple):
        return tuple(_to_device(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return obj.detach().to(device).requires_grad_(obj.requires_grad)
    return obj


def _numpy_errstate(settings: dict[str, str]):
    import numpy

    return numpy.errstate(**settings)


def _torch_out_of_memory(exc: BaseException) -> bool:
    """torch's allocators report an allocation they cannot make as an exception of their own, not a MemoryError."""
    return type(exc).__name__ == "OutOfMemoryError" or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


def _describe_exception(exc: BaseException, submission_path: str, errstate: dict[str, str] | None = None) -> dict[str, Any]:
    """What the learner needs: the exception and the frames of their own file."""
    if isinstance(exc, FloatingPointError) and errstate:
        kind = "floating_point"
    elif isinstance(exc, SystemExit):
        return {"kind": "exit", "type": "SystemExit", "message": f"called sys.exit({exc.code!r})", "traceback": ""}
    elif isinstance(exc, MemoryError) or _torch_out_of_memory(exc):
        kind = "memory"
    elif isinstance(exc, RecursionError):
        kind = "recursion"
    elif isinstance(exc, NotImplementedError):
        kind = "not_implemented"
    else:
        kind = "exception"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == submission_path]
    lines = [f"  line {f.lineno}, in {f.name}: {(f.line or '').strip()}" for f in frames[-5:]]
    if isinstance(exc, SyntaxError) and exc.filename and os.path.abspath(exc.filename) == submission_path:
        lines = [f"  line {exc.lineno}: {(exc.text or '').rstrip()}"]
    try:
        message = str(exc)
    except BaseException:
        message = "<str() of the exception failed>"
    described = {"kind": kind, "type": type(exc).__name__, "message": message[:2000], "traceback": "\n".join(lines)}
    if kind == "floating_point":
        described["errstate"] = dict(errstate)
    return described


def _cap_memory(memory_mb: int) -> None:
    """Address-space cap on top of what the imports already mapped. CUDA reserves huge virtual
    ranges, so with a GPU present the cap would break CUDA itself and is not set."""
    if memory_mb <= 0:
        return
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return
    with open("/proc/self/status") as status:
        vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = vm_kib * 1024 + memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _argument_labels(fn: Any, args: list, kwargs: dict) -> list[tuple[str, Any]]:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        return list(bound.arguments.items())
    except (TypeError, ValueError):
        return [(f"argument {i + 1}", a) for i, a in enumerate(args)] + list(kwargs.items())


def _mutated(labelled: list[tuple[str, Any]], before: list[bytes]) -> list[str]:
    return [name for (name, value), old in zip(labelled, before) if _encode(value) != old]


def _resolve_scenario(module_name: str, name: str, grader_module_name: str):
    if module_name != grader_module_name and not module_name.startswith("mlprep.grading"):
        raise LookupError(f"scenario {module_name}.{name} is not a grader or toolkit function")
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    return getattr(module, name)


def serve(config: dict[str, Any], fd_in: int, fd_out: int) -> None:
    submission_path = os.path.abspath(config["submission"])
    _load_module(config["grader_module"], config["grader"])  # imports numpy/torch as needed
    _cap_memory(config["memory_mb"])
    _send(fd_out, {"ok": True, "booted": True})  # mlprep's own part started; what fails from here is the learner's
    sys.path.insert(0, os.path.dirname(submission_path))
    try:
        submission = _load_module("submission", submission_path)
    except BaseException as exc:  # SyntaxError, SystemExit, anything raised at import
        _send(fd_out, {"ok": False, "error": _describe_exception(exc, submission_path)})
        return
    missing = [name for name in config["functions"] if not callable(getattr(submission, name, None))]
    _send(fd_out, {"ok": True, "missing": missing})

    while True:
        try:
            request = _receive(fd_in)
        except EOFError:
            return
        errstate = request.get("errstate")
        try:
            args = _to_device(request["args"], request["device"])
            kwargs = _to_device(request["kwargs"], request["device"])
            with _numpy_errstate(errstate) if errstate else contextlib.nullcontext():
                if request["op"] == "call":
                    fn = getattr(submission, request["fn"])
                    labelled = _argument_labels(fn, args, kwargs)
                    before = [_encode(value) for _, value in labelled]
                    value = fn(*args, **kwargs)
                    reply = {"ok": True, "value": value, "mutated": _mutated(labelled, before)}
                else:
                    scenario = _resolve_scenario(request["module"], request["scenario"], config["grader_module"])
                    reply = {"ok": True, "value": scenario(submission, *args, **kwargs), "mutated": []}
        except BaseException as exc:
            reply = {"ok": False, "error": _describe_exception(exc, submission_path, errstate)}
        try:
            _send(fd_out, reply)
        except BaseException as exc:  # the value could not be encoded, or the pipe broke
            _send(fd_out, {"ok": False, "error": {"kind": "unencodable", "type": type(exc).__name__, "message": str(exc)[:500], "traceback": ""}})

