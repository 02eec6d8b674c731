"""The shape of the package: imports flow one way, kinds are asked only of the kinds, commands are glue.

Read from the source with `ast` (nothing is imported), so a cycle or an arrow back up is caught the
day it is written, in any function, even in a branch no test runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mlprep"

# Top to bottom: a module may import from its own layer and the layers below it, never from above.
LAYERS = [
    ("cli", "pytest_plugin", "__main__"),
    ("practice",),
    ("screen",),
    ("kinds",),
    ("progress",),
    ("grading",),
    ("bank", "config"),
    ("workspace",),
    ("results", "text", "errors", "clock", "__init__"),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The mlprep modules `name` imports, anywhere in it (top level, functions, TYPE_CHECKING blocks)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names if f"{node.module}.{alias.name}" in MODULES}
    return {module for module in found if module in MODULES and module != name}


def layer_of(module: str) -> int:
    first = module.split(".")[1] if "." in module else "__init__"
    return next(number for number, names in enumerate(LAYERS) if first in names)


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)  # StopIteration: a new top-level module needs its place in LAYERS


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph`: its strongly connected components of two modules or more (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_inside_mlprep() -> None:
    assert cycles({module: imports_of(module) for module in MODULES}) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_flow_down_the_layers() -> None:
    upward = [f"{module} imports {target}" for module in MODULES for target in sorted(imports_of(module)) if layer_of(target) < layer_of(module)]
    assert upward == []
    assert layer_of("mlprep.screen.render") > layer_of("mlprep.practice.watch")  # a screen importing the loop would be upward


KIND_NAMES = ("code", "debug", "quiz", "story")


def _kind_literals(path: Path) -> list[str]:
    """Where a module spells a kind's name (outside docstrings): a comparison with it, a table keyed by it."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in KIND_NAMES and id(node) not in docstrings]


def test_no_kind_is_named_outside_the_kinds_and_the_banks_loader() -> None:
    """Nothing outside mlprep/kinds/ and mlprep/bank.py asks which kind an exercise is: it calls the kind."""
    allowed = {PACKAGE / "bank.py"}
    named = [hit for path in MODULES.values() if path not in allowed and "kinds" not in path.relative_to(PACKAGE).parts
             for hit in _kind_literals(path)]
    assert named == []
    assert _kind_literals(PACKAGE / "kinds" / "quiz.py")  # the scan sees a kind's name where one is written


def test_commands_are_glue() -> None:
    """No function of the CLI is over 40 lines: what a command does is a core function's."""
    tree = ast.parse((PACKAGE / "cli.py").read_text())
    long = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 40}
    assert long == {}


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_package_faces_are_short(init: Path) -> None:
    """A sub-package's __init__ says what lives there and re-exports a small surface."""
    assert len(init.read_text().splitlines()) <= 70


def test_each_kind_is_where_the_kinds_say_and_is_loaded_when_asked_for() -> None:
    """mlprep.kinds imports a kind's module the first time the kind is asked for (a quick command loads
    none it does not show): the lazy table must name every kind the bank knows, under its own name."""
    from mlprep.bank import LAYOUTS
    from mlprep.kinds import KINDS

    assert list(KINDS) == list(LAYOUTS)
    assert all(KINDS[name].name == name for name in KINDS)
