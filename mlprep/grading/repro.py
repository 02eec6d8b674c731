"""Repro scripts: one standalone Python file per failed check, to run or to step through in a debugger.

    write_repro_scripts(exercise, result, attempt) -> ReproScripts

Each script imports the learner's file, computes the check's smallest failing input (the same Python
the grade shows), calls the learner's code on it and prints what came back next to what the
reference returns on it, then exits 1 while they differ and 0 once they agree. The reference's value
is computed here, in the judge, and written into the script as data (never the reference's code);
values too large to write out, and inputs given as objects too large to write out, travel in a
pickle file beside the script.

Scripts go into a folder of their own per run, `<attempt stem>_repro/<UTC time>/`, next to the
attempt: mlprep writes only new files, never through a link, and removes nothing (earlier runs stay
until you delete them).
"""

from __future__ import annotations

import copy
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlprep.bank import Exercise
from mlprep.results import GradeResult

MARKER = "# mlprep repro script"


@dataclass
class ReproScripts:
    """The repro scripts written for one grade, and the failed checks that got none (with why)."""
    folder: Path
    written: list[tuple[str, Path]] = field(default_factory=list)  # (check, script)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (check, why there is no script)

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "scripts": [{"check": c, "path": str(p)} for c, p in self.written],
                "left_out": [{"check": c, "why": why} for c, why in self.left_out]}


def namespace(module: Any, text: str = "") -> dict[str, Any]:
    """Where a failing input runs: np, torch (when the input uses it), and the module's names."""
    import numpy as np

    names: dict[str, Any] = {"np": np}
    if "torch" in text:
        import torch

        names["torch"] = torch
    names.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    return names


def split_input(text: str) -> tuple[list[str], str]:
    """A failing input as (statements, the expression whose value it shows): a call is one expression
    (maybe over several lines); code is statements whose last line is an expression."""
    try:
        compile(text, "<failing input>", "eval")
        return [], text
    except SyntaxError:
        *body, last = text.strip().splitlines()
        return body, last


def run_input(text: str, module: Any) -> Any:
    """Run a failing input against a module's names and return the value of its expression."""
    names = namespace(module, text)
    body, expression = split_input(text)
    exec(compile("\n".join(body), "<failing input>", "exec"), names)
    return eval(compile(expression, "<failing input>", "eval"), names)


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return slug[:48].rstrip("_") or "check"


def _reference_value(call: Any, text: str, reference: Any) -> Any:
    """What the reference returns on the failing input (run on copies: the input stays as it failed)."""
    if call is not None and not call.is_code:
        return getattr(reference, call.fn)(*copy.deepcopy(call.args), **copy.deepcopy(call.kwargs))
    return run_input(text, reference)


def write_repro_scripts(exercise: Exercise, result: GradeResult, attempt: Path) -> ReproScripts:
    from mlprep.grading.engine import load_module, module_name
    from mlprep.grading import literal
    from mlprep.grading._calls import complete
    from mlprep.workspace import atomic_create, fresh_folder

    attempt = Path(attempt).resolve()
    scripts = ReproScripts(attempt.parent / f"{attempt.stem}_repro")
    failed = [c for c in result.failed_checks() if c.name != "your file imports and defines the interface"]
    if not failed:
        return scripts
    reference = load_module(module_name("reference", exercise.id), exercise.reference_path)
    scripts.folder = fresh_folder(scripts.folder)
    for position, check in enumerate(failed, start=1):
        call = getattr(check, "failing_call", None)
        text = check.failing_input
        if not text:
            scripts.left_out.append((check.name, "the check made no call of your code to show"))
            continue
        if not complete(text) and (call is None or call.is_code):
            scripts.left_out.append((check.name, "its input is built by the grader's own code from values too large to write out"))
            continue
        try:
            expected = _reference_value(call, text, reference)
        except Exception as exc:  # noqa: BLE001 - an input the reference cannot run on is not a standalone repro
            scripts.left_out.append((check.name, f"the input does not run on its own ({type(exc).__name__}: {exc})"))
            continue
        stem = f"{position:02d}_{_slug(check.name)}"
        data: dict[str, Any] = {}
        expected_text = literal(expected)
        if not complete(expected_text):
            data["expected"] = expected
            expected_text = "DATA['expected']"
        if complete(text):
            got_lines = _got_lines(text)
        else:  # a call whose arguments are too large to write out: they travel in the data file
            data["args"], data["kwargs"] = call.args, call.kwargs
            got_lines = [f"got = {call.fn}(*DATA['args'], **DATA['kwargs'])"]
        script = scripts.folder / f"{stem}.py"
        if data:
            atomic_create(scripts.folder / f"{stem}.pickle", pickle.dumps(data))
        atomic_create(script, _script(exercise, check, attempt, script, got_lines, expected_text, data_file=f"{stem}.pickle" if data else None))
        scripts.written.append((check.name, script))
    return scripts


def _got_lines(text: str) -> list[str]:
    """The failing input as statements that end by setting `got`."""
    body, expression = split_input(text)
    return [*body, f"got = {expression}"]


def _script(exercise: Exercise, check: Any, attempt: Path, script: Path, got_lines: list[str], expected_text: str, data_file: str | None) -> str:
    message = "\n".join(f"    {line}" if line else "" for line in check.message.replace('"""', "'''").splitlines())
    relative = Path(os.path.relpath(attempt, script.parent)) if script.parent.is_relative_to(attempt.parent) else attempt
    uses_torch = "torch" in "\n".join(got_lines) or "torch" in expected_text or exercise_uses_torch(exercise)
    tolerance = ""
    if isinstance(check.details.get("rtol"), (int, float)) and isinstance(check.details.get("atol"), (int, float)):
        tolerance = f", rtol={check.details['rtol']!r}, atol={check.details['atol']!r}"
    lines = [
        f"{MARKER}, written by `mlprep grade {exercise.id} --repro`: run it, or step through it in a debugger.",
        f'"""The check "{check.name}" of {exercise.id} failed ({check.status}):',
        "",
        message,
        "",
        f"This runs your file ({relative}) on the smallest failing input the grader found and prints",
        "what came back next to what the reference returns on it. It exits 1 while they differ, 0 once",
        'they agree (the check may judge more than this one value: grade again to be sure)."""',
        "",
        "import importlib.util",
        "import pathlib",
        *(["import pickle"] if data_file else []),
        "import sys",
        "",
        "import numpy as np",
        *(["import torch"] if uses_torch else []),
        "",
        "HERE = pathlib.Path(__file__).resolve().parent",
        f"ATTEMPT = (HERE / {str(relative)!r}).resolve()" if not relative.is_absolute() else f"ATTEMPT = pathlib.Path({str(attempt)!r})",
        *([f"DATA = pickle.loads((HERE / {data_file!r}).read_bytes())  # values too large to write out here"] if data_file else []),
        "",
        "# Your file, loaded as a module; its names are used below as the grader's input uses them.",
        'spec = importlib.util.spec_from_file_location("attempt", ATTEMPT)',
        "attempt = importlib.util.module_from_spec(spec)",
        'sys.modules["attempt"] = attempt',
        "spec.loader.exec_module(attempt)",
        'globals().update({name: value for name, value in vars(attempt).items() if not name.startswith("__")})',
        "",
        _COMPARE,
        "",
        "# What the reference returns on this input.",
        f"expected = {expected_text}",
        'print("expected (the reference):", expected)',
        "",
        "# Your code on the smallest failing input (a breakpoint here steps into it).",
        *got_lines,
        'print("got (your code):         ", got)',
        "",
        f"sys.exit(report(expected, got{tolerance}))",
        "",
    ]
    return "\n".join(lines)


def exercise_uses_torch(exercise: Exercise) -> bool:
    return "torch" in exercise.reference_path.read_text(encoding="utf-8")


_COMPARE = '''
# torch.testing.assert_close's tolerances per dtype (the grader's defaults).
TOLERANCES = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def as_array(value):
    """A tensor, number or list of numbers as a NumPy array, and the dtype whose tolerance applies."""
    if hasattr(value, "detach"):  # a torch tensor
        dtype = str(value.dtype).removeprefix("torch.")
        value = value.detach().cpu()
        return (value.double().numpy() if value.is_floating_point() else value.numpy()), dtype
    array = np.asarray(value)
    return array, array.dtype.name


def difference(expected, got, rtol=None, atol=None, where="got"):
    """Where got first differs from expected (values compared, not containers), or None."""
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(expected) != len(got):
            return f"{where}: expected {len(expected)} items, got {len(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            found = difference(e, g, rtol, atol, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        if set(expected) != set(got):
            return f"{where}: expected keys {sorted(map(str, expected))}, got {sorted(map(str, got))}"
        return next((d for k in expected if (d := difference(expected[k], got[k], rtol, atol, f"{where}[{k!r}]"))), None)
    try:
        (w, dtype), (g, _) = as_array(expected), as_array(got)
    except (TypeError, ValueError):
        return None if expected == got else f"{where}: expected {expected!r}, got {got!r}"
    if w.shape != g.shape:
        return f"{where}: expected shape {w.shape}, got shape {g.shape}"
    if w.dtype.kind not in "biufc" or g.dtype.kind not in "biufc":
        return None if np.array_equal(w, g) else f"{where}: expected {w!r}, got {g!r}"
    r, a = (rtol, atol) if rtol is not None else TOLERANCES.get(dtype, (0.0, 0.0))
    kind = np.complex128 if "c" in (w.dtype.kind, g.dtype.kind) else np.float64
    w64, g64 = w.astype(kind), g.astype(kind)
    with np.errstate(invalid="ignore", over="ignore"):
        close = (np.isfinite(w64) & (np.abs(g64 - w64) <= a + r * np.abs(w64))) | (g64 == w64) | (np.isnan(g64) & np.isnan(w64))
    if close.all():
        return None
    index = np.unravel_index(int(np.flatnonzero(~close.ravel())[0]), w.shape) if w.shape else ()
    at = f" at index {tuple(map(int, index))}" if w.shape else ""
    return (f"{where}: {int((~close).sum())} of {close.size} values differ; first{at}: expected {w[index].item()!r}, got {g[index].item()!r}"
            f" (allowed |got - expected| <= {a:g} + {r:g} * |expected|)")


def report(expected, got, rtol=None, atol=None):
    """Print where got first differs from expected: 1 while they differ, 0 once they agree."""
    found = difference(expected, got, rtol, atol)
    print(f"DIFFERENT: {found}" if found else "SAME: your code returns what the reference returns on this input")
    return 1 if found else 0'''.strip("\n")
