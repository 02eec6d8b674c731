"""The real bank: well-formed, and proven by the self-check (which CI runs through this file)."""

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.kinds import kind_of

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bank():
    return load_bank(ROOT)


def test_bank_loads_without_broken_exercises(bank):
    """Every folder of exercises/ is an exercise of the bank: nothing is left out as broken."""
    assert bank.broken == []
    assert sorted(bank.ids()) == sorted(p.name for p in (ROOT / "exercises").iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


@pytest.mark.parametrize("exercise_id", sorted(load_bank(ROOT).ids()))
def test_exercise_is_complete(bank, exercise_id):
    exercise = bank.get(exercise_id)
    assert len(exercise.hints) >= 3
    if not kind_of(exercise).runs_code:  # a quiz's or a story's own rules are its proof (kinds.quiz, kinds.story)
        assert kind_of(exercise).prove(exercise, [], "cpu").problems == []
        return
    stub_names = {node.name for node in ast.parse(exercise.stub()).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    reference_names = {node.name for node in ast.parse(exercise.reference_path.read_text()).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    prompt = exercise.prompt()
    for name in exercise.functions:
        assert name in stub_names and name in reference_names
        assert f"def {name}(" in prompt or f"class {name}" in prompt, f"the prompt of {exercise_id} does not show the interface of {name}"
    bugs = exercise.bugs()
    assert len(bugs) >= 3 and len({b.name for b in bugs}) == len(bugs)
    for bug in bugs:
        source = bug.apply(exercise.reference_path.read_text())  # raises unless each edit applies exactly once
        ast.parse(source)
        assert bug.summary
    assert len(exercise.alternatives()) >= 2


@pytest.mark.parametrize("exercise_id", sorted(e.id for e in load_bank(ROOT).exercises if kind_of(e).runs_code))
def test_every_code_exercise_has_two_or_three_interview_follow_ups(bank, exercise_id):
    from mlprep.kinds.questions import check_quiz, has_followups, load_quiz

    exercise = bank.get(exercise_id)
    assert has_followups(exercise), f"{exercise_id}: exercises/{exercise_id}/followups.toml and solutions/{exercise_id}/followups_key.toml"
    assert 2 <= len(load_quiz(exercise, followups=True).questions) <= 3
    assert check_quiz(exercise, followups=True).problems == []


def test_every_kind_of_the_bank_is_in_it(bank):
    """The bank holds exercises of every kind there is (a kind nobody writes for would be dead code)."""
    from mlprep.kinds import KINDS

    assert {e.kind for e in bank.exercises} == set(KINDS)


@pytest.mark.slow
def test_self_check_of_the_whole_bank(capsys, request, whole_bank_selfcheck):
    """Every reference passes, every stub fails, every known bug is caught and diagnosed as itself. The kill
    tables go to the log with `pytest -v` and in CI (.ci/run), and with any failure; a quiet run stays short."""
    process, _ = whole_bank_selfcheck
    if request.config.getoption("verbose") > 0 or os.environ.get("CI"):  # CI's log keeps them
        with capsys.disabled():
            print("\n" + process.stdout)
    assert process.returncode == 0, process.stdout + process.stderr[-5000:]
    assert "self-check: OK" in process.stdout


@pytest.mark.slow
def test_every_failing_grade_of_the_bank_fits_on_one_screen(whole_bank_selfcheck):
    """The compact grade of every known-bug variant and every stub, at 80 columns, in at most 40 rows of the terminal."""
    import io

    from rich.console import Console

    from mlprep.screen.render import COMPACT_LINES, render_grade
    from mlprep.results import GradeResult

    _, report = whole_bank_selfcheck
    assert report is not None
    too_long = {}
    measured = 0
    for exercise in report["exercises"]:
        for label, grade in exercise["grades"].items():
            if not (label.startswith("bug ") or label == "stub"):
                continue
            console = Console(file=io.StringIO(), width=80, color_system=None)
            render_grade(console, GradeResult.from_dict(grade), path=f"/home/learner/mlprep/{exercise['id']}/{exercise['id']}.py")
            rows = sum(max(1, -(-len(line) // 80)) for line in console.file.getvalue().splitlines())  # a long input line folds
            measured += 1
            if rows > COMPACT_LINES:
                too_long[f"{exercise['id']} {label}"] = rows
    assert measured >= 400
    assert too_long == {}


def _inputs_on_screen(out: str) -> list[tuple[list[str], bool]]:
    """The failing inputs a grade's screen shows, each as (its code lines, whether lines before them were
    left out): the indented lines under "smallest failing input:" (or "the input it was running:"), after
    the note of the lines left out, which may wrap. A code line the renderer folded ends its block early."""
    blocks, lines = [], out.splitlines()
    for number, line in enumerate(lines):
        if line.strip() not in ("smallest failing input:", "the input it was running:"):
            continue
        rest, cut = lines[number + 1:], False
        if rest and rest[0].startswith("    … ("):
            cut = True
            while rest and not rest[0].rstrip().endswith("as a script)"):
                rest = rest[1:]
            rest = rest[1:]
        code = []
        for code_line in rest:
            if not code_line.startswith("    "):
                break
            code.append(code_line[4:])
        blocks.append((code, cut))
    return blocks


@pytest.mark.slow
def test_every_failing_input_the_bank_prints_pastes_and_runs(bank, whole_bank_selfcheck):
    """Each failing input a grade of the bank shows in full, at 40, 80 and 120 columns, comes out with its
    lines whole: pasted into Python (against the exercise's names: the reference's) it compiles and runs,
    an exception of the contract aside (an input that must raise ValueError raises it)."""
    import io

    from rich.console import Console

    from mlprep.grading._calls import complete
    from mlprep.grading.engine import load_module, module_name
    from mlprep.grading.repro import run_input
    from mlprep.results import GradeResult
    from mlprep.screen.render import render_grade

    _, report = whole_bank_selfcheck
    broken, ran = [], set()
    for exercise in report["exercises"]:
        for label, data in exercise["grades"].items():
            if not (label.startswith("bug ") or label == "stub"):
                continue
            result = GradeResult.from_dict(data)
            inputs = {c.failing_input for c in result.failed_checks() if c.failing_input and complete(c.failing_input)}
            failing = [c.failing_input for c in result.failed_checks() if c.failing_input]  # every input the screen may show
            for width in (40, 80, 120):
                console = Console(file=io.StringIO(), width=width, color_system=None)
                render_grade(console, result)
                out = console.file.getvalue()
                for code, cut in _inputs_on_screen(out):
                    if not any(text.splitlines()[-len(code):] == code and (cut or len(text.splitlines()) == len(code)) for text in failing if code):
                        broken.append(f"{exercise['id']} {label} at {width} columns: the input is not shown with its lines whole")
            reference = load_module(module_name("reference", exercise["id"]), bank.get(exercise["id"]).reference_path)
            for text in inputs - ran:
                ran.add(text)
                try:
                    run_input(text, reference)
                except (SyntaxError, NameError) as exc:
                    broken.append(f"{exercise['id']} {label}: {type(exc).__name__}: {exc}")
                except Exception:  # noqa: BLE001 - the contract's own exception, on an input that must raise
                    pass
    assert len(ran) >= 200
    assert broken == []


@pytest.mark.parametrize("width", [40, 80, 120])
def test_show_keeps_every_code_line_of_every_prompt_whole(bank, width):
    """`mlprep show` renders the prompt's Markdown; a code block's lines come out whole at any width (a
    docstring's indentation intact), never folded by the renderer."""
    import re

    from mlprep.screen.term import rendered_prompt

    for exercise in bank.exercises:
        out = rendered_prompt(exercise, width, False)
        for block in re.findall(r"^```[^\n]*\n(.*?)^```", exercise.prompt(), re.S | re.M):
            for line in block.rstrip("\n").splitlines():
                assert line.rstrip() == "" or "  " + line.rstrip() in out, f"{exercise.id} at {width} columns: {line!r}"


@pytest.mark.parametrize("exercise_id", sorted(load_bank(ROOT).ids()))
def test_no_prose_loses_characters_to_markdown_emphasis(bank, exercise_id):
    """A `*` between two characters of a word opens emphasis in Markdown: `2**16` renders as "216"
    with "16..." in bold. Outside code such expressions go in backticks."""
    import re

    fenced, found = False, []
    for number, line in enumerate(bank.get(exercise_id).prompt().splitlines(), start=1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        prose = "" if fenced else re.sub(r"`[^`]*`", "", line)
        found += [f"line {number}: {m.group()!r}" for m in re.finditer(r"\w\*+[\w(-]", prose)]
    assert found == [], f"{exercise_id}'s prompt: write these in backticks"


def test_the_wheel_carries_the_bank(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)], check=True, timeout=600)
    (wheel,) = tmp_path.glob("mlprep-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for exercise in load_bank(ROOT).exercises:
        for path in (exercise.dir / "exercise.toml", exercise.stub_path, exercise.reference_path, *([exercise.grader_path] if exercise.layout.grader else [])):
            assert f"mlprep/_bank/{path.relative_to(ROOT).as_posix()}" in names


def test_commands_named_in_the_bank_exist(bank):
    """Stubs, prompts and hints send learners to commands: every `mlprep X` they name must be real."""
    import re

    from typer.main import get_command

    from mlprep.cli import app

    commands = set(get_command(app).commands)
    for exercise in bank.exercises:
        texts = [exercise.stub(), exercise.prompt(), *exercise.hints]
        for name in re.findall(r"\bmlprep ([a-z][a-z-]*)", "\n".join(texts)):
            assert name in commands, f"{exercise.id} mentions `mlprep {name}`, which is not a command"


def test_graders_and_references_need_only_what_mlprep_installs():
    """SciPy and scikit-learn are test dependencies (alternatives wrap them): grading never needs them."""
    runtime_only = [*sorted((ROOT / "graders").glob("*.py")), *sorted((ROOT / "solutions").glob("*/reference.py")),
                    *sorted((ROOT / "exercises").glob("*/stub.py"))]
    for path in runtime_only:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] in ("scipy", "sklearn") for n in names), f"{path.relative_to(ROOT)} imports {names}"
