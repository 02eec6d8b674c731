"""What the graders of networks and their training share (mlp-backprop, grad-accumulation, batchnorm,
standardize): a case written once as code, which runs in the sandbox before the learner's call, here to
know the numbers, and is the failing input shown; and a stateful object's attribute read as a record."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlprep.grading.values import to_array


def run_code(code: str, module: Any = None) -> dict:
    """The names `code` defines, run with np, torch (where it says torch) and the public names of `module`
    (the learner's module, sandbox side) in scope. The grader's own lines, never the learner's: the same
    text builds a case in the sandbox and in the judge, and shows it."""
    namespace = {name: getattr(module, name) for name in dir(module) if not name.startswith("_")} if module is not None else {}
    namespace["np"] = np
    if "torch" in code:
        import torch

        namespace["torch"] = torch
    exec(code, namespace)
    return namespace


def attribute_copy(obj: Any, name: str) -> Any:
    """Sandbox side: obj.<name> as a float64 NumPy copy (later calls cannot change what was recorded), None
    where obj has no such attribute (or holds None), or "Type: repr" where it holds something other than numbers."""
    value = getattr(obj, name, None)
    if value is None:
        return None
    try:
        return np.array(to_array(value), dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):
        return f"{type(value).__name__}: {value!r:.60}"
