"""Importing a file (a grader, a reference, the learner's submission) under a fixed module name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_module(name: str, path: str | Path) -> ModuleType:
    """The module `name` from `path`, imported once: a second call for the same file returns it. On
    failure nothing is left in sys.modules, and the exception propagates."""
    path = str(path)
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == path:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
