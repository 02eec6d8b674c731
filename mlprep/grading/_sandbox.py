"""The sandbox: the only process that ever runs the learner's code.

It holds the grader's scenarios (never its checks: see _files.load_scenarios), caps its own memory,
imports the submission, then answers requests from the judge: call a learner function, or run a
scenario on the learner's module. Everything it sends back is plain data (see _wire); it decides
nothing. What it uses to answer (the channel, the encoder, the scenarios, the check for arguments
changed in place) is bound before the learner's module is imported, so that replacing names in numpy,
torch, the builtins or mlprep's modules does not change what it sends.

Runs in a child forked by the fork server (_server), which has already imported numpy, torch and the
grader's scenarios: `serve(config, fd_in, fd_out, source)`, source being the submission's bytes, read
before the sandbox was sealed.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import resource
import struct
import sys
import traceback
from typing import Any

import mlprep.grading._wire as _wire
from mlprep.grading._files import load_source, take_scenarios  # the grader's scenarios come loaded by the fork server


def _channel(fd_in: int, fd_out: int, encode: Any, decode: Any) -> tuple[Any, Any, Any]:
    """(send, receive, encode) over the judge's pipes, every part bound now (see the module's docstring)."""
    read, write, pack, unpack, join, view_of, len_ = os.read, os.write, struct.pack, struct.unpack, b"".join, memoryview, len

    def read_exact(n: int) -> bytes:
        chunks, remaining = [], n
        while remaining:
            chunk = read(fd_in, min(remaining, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            remaining -= len_(chunk)
        return join(chunks)

    def receive() -> Any:
        (size,) = unpack("<Q", read_exact(8))
        return decode(read_exact(size), tensor_device="cpu")

    def send(obj: Any) -> None:
        data = encode(obj)
        view = view_of(pack("<Q", len_(data)) + data)
        while view:
            view = view[write(fd_out, view):]

    return send, receive, encode


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


def _scenarios_of(module: Any) -> dict[str, Any]:
    """The module's scenarios: its functions whose first parameter is `module`, the learner's module."""
    found = {}
    for name, value in vars(module).items():
        code = getattr(value, "__code__", None)
        if inspect.isfunction(value) and code is not None and code.co_argcount and code.co_varnames[0] == "module":
            found[name] = value
    return found


def serve(config: dict[str, Any], fd_in: int, fd_out: int, source: bytes | None = None) -> None:
    submission_path = os.path.abspath(config["submission"])
    grader = take_scenarios(config["grader_module"], config["grader"])  # numpy, torch as needed
    import mlprep.grading as toolkit  # noqa: F401 - its parts, whose scenarios (value_and_grad...) a check may run

    scenarios = {config["grader_module"]: _scenarios_of(grader)}
    scenarios.update({name: _scenarios_of(module) for name, module in sys.modules.items() if name.startswith("mlprep.grading.")})
    send, receive, encode = _channel(fd_in, fd_out, _wire.make_encoder(), _wire.decode)
    to_device, describe, labels, nullcontext, errstate_of = _to_device, _describe_exception, _argument_labels, contextlib.nullcontext, _numpy_errstate
    getattr_, callable_, BaseException_, zip_ = getattr, callable, BaseException, zip
    _cap_memory(config["memory_mb"])
    send({"ok": True, "booted": True})  # mlprep's own part started; what fails from here is the learner's
    sys.path.insert(0, os.path.dirname(submission_path))
    try:
        if source is None:
            raise FileNotFoundError(f"cannot read {submission_path}")
        submission = load_source("submission", submission_path, source)
    except BaseException as exc:  # SyntaxError, SystemExit, anything raised at import
        send({"ok": False, "error": describe(exc, submission_path)})
        return
    missing = [name for name in config["functions"] if not callable_(getattr_(submission, name, None))]
    send({"ok": True, "missing": missing})

    while True:
        try:
            request = receive()
        except EOFError:
            return
        errstate = request.get("errstate")
        try:
            args = to_device(request["args"], request["device"])
            kwargs = to_device(request["kwargs"], request["device"])
            with errstate_of(errstate) if errstate else nullcontext():
                if request["op"] == "call":
                    fn = getattr_(submission, request["fn"])
                    labelled = labels(fn, args, kwargs)
                    before = [encode(value) for _, value in labelled]
                    value = fn(*args, **kwargs)
                    reply = {"ok": True, "value": value, "mutated": [name for (name, arg), old in zip_(labelled, before) if encode(arg) != old]}
                else:
                    scenario = scenarios.get(request["module"], {}).get(request["scenario"])
                    if scenario is None:
                        raise LookupError(f"{request['module']}.{request['scenario']} is not a scenario (a grader or toolkit function of `module`)")
                    reply = {"ok": True, "value": scenario(submission, *args, **kwargs), "mutated": []}
        except BaseException_ as exc:
            reply = {"ok": False, "error": describe(exc, submission_path, errstate)}
        try:
            send(reply)
        except BaseException_ as exc:  # the value could not be encoded, or the pipe broke
            send({"ok": False, "error": {"kind": "unencodable", "type": type(exc).__name__, "message": str(exc)[:500], "traceback": ""}})
