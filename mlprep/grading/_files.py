"""Importing a file (a grader, a reference, the learner's submission) under a fixed module name, and a
grader's scenarios alone, for the learner's side.

A grader is two things: the checks and what they expect (the judge's side), and the scenarios that drive
the learner's code (the sandbox's side: a module-level function whose first parameter is `module`, the
learner's module). The sandbox must hold the scenarios and nothing that computes an expected value, or
the learner's code could find those functions in its own process and return what they compute. So the
sandbox's copy of a grader is cut from its source: the imports, the scenarios, and what they use (the
module-level functions, classes and constants their code names, and what those name in turn); the
checks, and every helper only they use, are left out. Lines keep their numbers, so a scenario's
traceback points at the grader as written.
"""

from __future__ import annotations

import ast
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


def load_source(name: str, path: str, source: bytes) -> ModuleType:
    """The module `name` made from `source`, which is the file `path`'s (read before the file went out of
    sight): its tracebacks show `path` and its lines. Not cached; on failure nothing is left in sys.modules."""
    import linecache

    text = source.decode("utf-8", errors="replace")
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    module = ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _bound_names(node: ast.stmt) -> set[str]:
    """The module-level names a statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    names = set()
    for target in ast.walk(node):
        if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
            names.add(target.id)
    return names


def _attribute_roots(node: ast.stmt) -> set[str]:
    """For `fn.repro = ...` and the like: the names whose attributes the statement sets."""
    roots = set()
    for target in getattr(node, "targets", []):
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if isinstance(target, ast.Name):
            roots.add(target.id)
    return roots


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def is_scenario(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef) and bool(node.args.args) and node.args.args[0].arg == "module"


def scenario_source(source: str, path: str = "<grader>") -> ast.Module:
    """The part of a grader's source the sandbox gets (see the module's docstring)."""
    tree = ast.parse(source, path)
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    kept = {id(node) for node in body if isinstance(node, (ast.Import, ast.ImportFrom)) or is_scenario(node)}
    needed: set[str] = set()
    while True:
        for node in body:
            if id(node) in kept:
                needed |= _used_names(node) | _bound_names(node)
        grown = {id(node) for node in body if id(node) not in kept and (_bound_names(node) & needed or _attribute_roots(node) & needed)}
        if not grown:
            break
        kept |= grown
    return ast.Module(body=[node for node in body if id(node) in kept], type_ignores=[])


_scenarios: dict[tuple[str, str], ModuleType] = {}  # in the fork server: loaded once, forked into every sandbox


def load_scenarios(name: str, path: str | Path) -> ModuleType:
    """The grader `path`'s scenarios and what they use, as a module named `name` (see the module's
    docstring), made once per process. It is not in sys.modules: the learner's code cannot import it."""
    key = (name, str(path))
    if key not in _scenarios:
        tree = scenario_source(Path(path).read_text(encoding="utf-8"), str(path))
        module = ModuleType(name)
        module.__file__ = str(path)
        exec(compile(tree, str(path), "exec", dont_inherit=True), module.__dict__)
        _scenarios[key] = module
    return _scenarios[key]


def take_scenarios(name: str, path: str | Path) -> ModuleType:
    """load_scenarios's module, leaving no reference to it behind in this module: the sandbox holds it in a
    local, before the learner's code is imported."""
    module = load_scenarios(name, path)
    _scenarios.clear()
    return module
