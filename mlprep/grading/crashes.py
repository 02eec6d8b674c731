"""Crash points, sandbox side: code killed part-way through what it does to the file system, to judge what each
crash leaves behind (an atomic write leaves the previous file or the new one, whole, never a mix or nothing).

    whole = in_child(save, target=path)                  # a complete run, in a forked child: how it ended, its file calls
    for k in crash_points(whole["calls"]):               # every call (of a run of alike ones, the first and the last)
        in_child(save, target=path, kill_after=k)        # a child killed (SIGKILL) right after its k-th file call
        ... what path holds now ...
        restore_folder(folder, before)                   # the folder as it was before the save, leftovers removed

    with half_written([(torch, "save"), (torch.serialization, "save")], REAL_SAVE, crash="raise"): ...

A file call is a call of one of FILE_CALLS (those that create, write, rename or remove a file: os.open, open for
writing, os.write, os.fsync, os.replace, os.remove, shutil.copyfile...), by whatever the code runs, nested ones
included: shutil.copyfile's open of its destination is a call of its own. `also` adds functions of the exercise,
each as (owner, name, the positions of its file arguments): [(torch, "save", (1,))], as torch.save writes from C++
(one opaque call; half_written probes the middle of it). Writes through a file object's own methods (f.write) are
no calls: C methods cannot be wrapped. Each call is described by the roles of its file arguments ("path", "a file
in path's folder", "a file in another folder", "a file descriptor"), never by their names, so that the same
behaviour reads the same in every run.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import io
import json
import os
import shutil
import signal
import sys
import tempfile
from typing import Any, Callable, Iterator, Sequence

FILE_CALLS = [  # (owner, name, the positions of its file arguments)
    (os, "open", (0,)), (builtins, "open", (0,)), (io, "open", (0,)), (os, "write", (0,)), (os, "fsync", (0,)), (os, "fdatasync", (0,)),
    (os, "truncate", (0,)), (os, "ftruncate", (0,)), (os, "replace", (0, 1)), (os, "rename", (0, 1)), (os, "remove", (0,)), (os, "unlink", (0,)),
    (os, "link", (0, 1)), (os, "symlink", (0, 1)), (os, "sendfile", (0, 1)), (shutil, "copyfile", (0, 1)), (shutil, "copy", (0, 1)),
    (shutil, "copy2", (0, 1)), (shutil, "copyfileobj", (0, 1)), (shutil, "move", (0, 1)),
]
_WRITING_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
IN_FOLDER, ELSEWHERE = "a file in path's folder", "a file in another folder"

# Bound at import, before any learner code runs in the sandbox.
_remove, _rmtree, _listdir, _isdir, _isfile = os.remove, shutil.rmtree, os.listdir, os.path.isdir, os.path.isfile
_open, _fork, _pipe, _read, _write, _close, _waitpid, _kill, _exit = (builtins.open, os.fork, os.pipe, os.read, os.write, os.close, os.waitpid,
                                                                       os.kill, os._exit)


def role(value: Any, target: str) -> str:
    """What a file argument is, by its role: "path" (the target itself), a file in its folder or in another, a descriptor."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "a file descriptor"
    if isinstance(value, (str, bytes, os.PathLike)):
        name = os.path.abspath(os.fsdecode(value))
        if name == os.path.abspath(target):
            return "path"
        return IN_FOLDER if os.path.dirname(name) == os.path.dirname(os.path.abspath(target)) else ELSEWHERE
    return "an open file" if hasattr(value, "write") else type(value).__name__


def _writes(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether a call of `name` changes the file system (an open for reading does not)."""
    if name == "os.open":
        return bool((args[1] if len(args) > 1 else kwargs.get("flags", 0)) & _WRITING_FLAGS)
    if name == "open":
        return any(c in str(args[1] if len(args) > 1 else kwargs.get("mode", "r")) for c in "wax+")
    return True


def _described(name: str, args: tuple, positions: Sequence[int], target: str) -> dict:
    files = [role(args[i], target) for i in positions if i < len(args)]
    return {"call": name, "files": files, "text": f"{name}({', '.join(files)})"}


@contextlib.contextmanager
def _counted(target: str, also: Sequence[tuple[Any, str, tuple[int, ...]]], on_call: Callable[[dict], None]) -> Iterator[None]:
    """Inside: every file call (FILE_CALLS and `also`) reports itself to on_call once it has returned."""
    patched = []
    for owner, name, positions in [*FILE_CALLS, *also]:
        real = getattr(owner, name, None)
        if real is None:
            continue
        label = name if owner in (builtins, io) else f"{owner.__name__}.{name}"

        def wrapper(*args, _real=real, _label=label, _positions=positions, **kwargs):
            result = _real(*args, **kwargs)
            if _writes(_label, args, kwargs):
                on_call(_described(_label, args, _positions, target))
            return result

        patched.append((owner, name, real))
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for owner, name, real in reversed(patched):
            setattr(owner, name, real)


def _no_cuda_here() -> None:
    """CUDA cannot be used in a child forked from a process that has used it: code that also keeps the CUDA
    generators' states (if torch.cuda.is_available()) sees no GPU there, rather than failing."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.cuda.is_available = lambda: False
        torch.cuda.device_count = lambda: 0


def in_child(run: Callable[[], Any], *, target: str, kill_after: int | None = None, also: Sequence[tuple[Any, str, tuple[int, ...]]] = ()) -> dict:
    """run() in a forked child: with kill_after=k, killed with SIGKILL right after its k-th file call (see _counted).
    Returns how it ended ("returned", "raised", "killed", or "ended" for an exit of its own), the message of what it
    raised ("" else), and its file calls, in order (each {"call", "files", "text"}). The child's changes to the files
    stay; its changes to memory do not."""
    read_end, write_end = _pipe()
    pid = _fork()
    if pid == 0:  # the child
        code = 3
        try:
            _close(read_end)
            _no_cuda_here()
            calls = 0

            def on_call(described: dict) -> None:
                nonlocal calls
                calls += 1
                _write(write_end, (json.dumps(described) + "\n").encode())
                if calls == kill_after:
                    _kill(os.getpid(), signal.SIGKILL)

            with _counted(target, also, on_call):
                run()
        except BaseException as exc:  # reported to the parent, which names it
            code = 4
            with contextlib.suppress(BaseException):
                _write(write_end, (json.dumps({"raised": f"{type(exc).__name__}: {exc}"[:300]}) + "\n").encode())
        finally:
            _exit(code)
    _close(write_end)
    chunks = []
    while chunk := _read(read_end, 1 << 16):  # read to the end first: a child writing more than a pipe holds would wait for us
        chunks.append(chunk)
    _close(read_end)
    _, status = _waitpid(pid, 0)
    lines = [json.loads(line) for line in b"".join(chunks).decode(errors="replace").splitlines() if line.strip()]
    raised = next((line["raised"] for line in lines if "raised" in line), "")
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        ended = "killed"
    else:
        ended = {3: "returned", 4: "raised"}.get(os.waitstatus_to_exitcode(status), "ended")
    return {"ended": ended, "message": raised, "calls": [line for line in lines if "call" in line]}


def crash_points(calls: Sequence[dict]) -> list[int]:
    """The k (1-based) worth killing a run right after, of the file calls of a whole run: every call, but of a run of
    three or more alike (os.write after os.write to the same kind of file) only the first and the last."""
    texts = [call["text"] for call in calls]
    return [k for k in range(1, len(texts) + 1) if not (1 < k < len(texts) and texts[k - 2] == texts[k - 1] == texts[k])]


@contextlib.contextmanager
def half_written(targets: Sequence[tuple[Any, str]], real: Callable, *, crash: str, dest: tuple[int, str] = (1, "f"), at: int = 1,
                 what: str = "torch.save") -> Iterator[dict]:
    """Inside the block, each (owner, name) of `targets` stands in for `real`, a function that writes a serialized
    object to its argument `dest` (position, name): torch.save(obj, f). Its call number `at` writes the first half of
    what `real` writes to whatever it was given, a path or any object with a write method (flushed when it can be),
    then raises OSError (crash="raise") or kills the process with SIGKILL (crash="kill"); the calls before it are
    the real function's. Yields {"calls": how often it was called}."""
    record = {"calls": 0}
    index, keyword = dest

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        record["calls"] += 1
        if record["calls"] < at:
            return real(*args, **kwargs)
        args, buffer = list(args), io.BytesIO()
        if len(args) > index:
            destination, args[index] = args[index], buffer
        else:
            destination, kwargs[keyword] = kwargs.get(keyword), buffer
        real(*args, **kwargs)
        part = buffer.getvalue()[: len(buffer.getvalue()) // 2]
        if isinstance(destination, (str, bytes, os.PathLike)):
            with _open(destination, "wb") as out:
                out.write(part)
        else:
            destination.write(part)
            if callable(getattr(destination, "flush", None)):
                destination.flush()
        if crash == "kill":
            _kill(os.getpid(), signal.SIGKILL)
        raise OSError(errno.ENOSPC, f"No space left on device (the grader's {what}, after writing half of the bytes)")

    saved = [(owner, name, getattr(owner, name)) for owner, name in targets]
    for owner, name, _ in saved:
        setattr(owner, name, stand_in)
    try:
        yield record
    finally:
        for owner, name, previous in reversed(saved):
            setattr(owner, name, previous)


@contextlib.contextmanager
def scratch_folder(prefix: str = "scratch-") -> Iterator[str]:
    """A fresh folder of the sandbox's scratch space, removed afterwards (tempfile draws from no global RNG)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def folder_files(folder: str) -> dict[str, bytes]:
    """The files of a folder (not its subfolders) and their bytes."""
    files = {}
    for name in sorted(_listdir(folder)):
        if _isfile(os.path.join(folder, name)):
            with _open(os.path.join(folder, name), "rb") as f:
                files[name] = f.read()
    return files


def restore_folder(folder: str, files: dict[str, bytes]) -> None:
    """The folder back as folder_files saw it: files added since removed (subfolders too), the others rewritten."""
    for name in _listdir(folder):
        if name not in files:
            full = os.path.join(folder, name)
            _rmtree(full, ignore_errors=True) if _isdir(full) and not os.path.islink(full) else _remove(full)
    for name, data in files.items():
        with _open(os.path.join(folder, name), "wb") as f:
            f.write(data)
