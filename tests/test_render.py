"""Rendering, on a plain rich Console (rich's own test style): what the learner reads."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from mlprep.screen import render, term
from mlprep.results import CheckResult, GradeResult
from mlprep.kinds.proof import BugOutcome, ExerciseSelfCheck, VariantOutcome
from mlprep.kinds.selfcheck import SelfCheckReport


def console(width: int = 120) -> Console:
    return Console(file=io.StringIO(), width=width, color_system=None, highlight=False)


def text_of(c: Console) -> str:
    return c.file.getvalue()  # type: ignore[attr-defined]


def grade(status: str = "fail", checks: list[CheckResult] | None = None, **kwargs) -> GradeResult:
    checks = checks if checks is not None else [CheckResult("imports", "pass", "", {}, 0.2)]
    return GradeResult("adamw", status, kwargs.pop("message", "summary"), checks, **kwargs)


def test_verbose_grade_shows_status_table_and_failure_details_verbatim() -> None:
    checks = [
        CheckResult("imports", "pass", "", {}, 0.2),
        CheckResult("float16 grads", "fail", "expected finite w, got inf at index [0, 3]\nupcast g first", {"max_abs_err": 1.5, "where": "[bold]x[/bold]"}, 0.5),
        CheckResult("cuda", "skip", "no GPU here", {}, 0.0),
    ]
    c = console()
    render.render_grade(c, grade("fail", checks, message="1 of 2 checks did not pass"), path="/ws/adamw/adamw.py", verbose=True)
    out = text_of(c)
    assert "adamw: FAIL — 1 of 2 checks did not pass" in out
    assert "/ws/adamw/adamw.py" in out
    assert "got inf at index [0, 3]" in out  # rich markup characters printed as written
    assert "upcast g first" in out  # the full message in the details, not just its first line
    assert "max_abs_err: 1.5" in out and "where: [bold]x[/bold]" in out
    table_rows = [line for line in out.splitlines() if "│" in line]
    assert [row.split("│")[0].strip() for row in table_rows] == ["pass", "fail", "skip"]
    assert "not a verdict on your code" not in out


def test_compact_grade_shows_each_failure_once_in_full_and_folds_skips() -> None:
    message = "expected finite w, got inf at index [0, 3]\nupcast g first"
    checks = [
        CheckResult("imports", "pass", "", {}, 0.2),
        CheckResult("float16 grads", "fail", message, {"max_abs_err": 1.5}, 0.5, failing_input="adamw(w, g)"),
        *(CheckResult(f"scenario {i} [cuda]", "skip", "CUDA is not available on this machine; this scenario did not run") for i in range(7)),
        CheckResult("speed", "skip", "not run: the time limit for the whole grade (10 s) ran out"),
    ]
    c = console(80)
    render.render_grade(c, grade("fail", checks, message="1 of 2 checks did not pass (8 skipped); first: float16 grads: expected"), path="/ws/a.py")
    out = text_of(c)
    lines = out.splitlines()
    assert lines[0] == "adamw: FAIL — 1 of 2 checks did not pass (8 skipped)  (cpu, 0.0s)"  # the first failure comes below, not here
    assert out.count("got inf at index [0, 3]") == 2  # its row (one line) and its full text: not three times
    assert out.count("upcast g first") == 1 and "smallest failing input" in out and "adamw(w, g)" in out
    assert "max_abs_err" not in out  # the details are for --verbose and --json
    assert sum("7 CUDA scenarios skipped: no GPU here" in line for line in lines) == 1
    assert "[cuda]" not in out
    assert "speed  not run: the time limit for the whole grade (10 s) ran out" in out
    assert all(len(line) <= 80 for line in lines)


def test_compact_grade_of_a_stub_says_its_error_once() -> None:
    checks = [CheckResult("imports", "pass")] + [CheckResult(f"check {i}", "error", "not implemented yet: NotImplementedError: write adamw") for i in range(11)]
    c = console(80)
    render.render_grade(c, grade("error", checks, message="11 of 12 checks did not pass"))
    out = text_of(c)
    assert out.count("NotImplementedError") == 2  # one row for the eleven, one full text
    assert "11 checks, the same error:" in out and "ERROR 11 checks (check 0, check 1, …)" in out
    assert len(out.splitlines()) <= 6


def test_compact_grade_names_the_failures_that_do_not_fit() -> None:
    long = "expected 0, got 0.25. " * 60
    checks = [CheckResult(f"scenario {i}", "fail", f"scenario {i}: {long}") for i in range(12)]
    c = console(80)
    render.render_grade(c, grade("fail", checks, message="12 of 12 checks did not pass"))
    lines = text_of(c).splitlines()
    assert len(lines) <= render.COMPACT_LINES
    assert [line for line in lines if line.startswith("FAIL ")] == ["FAIL scenario 0"]  # the first always in full
    assert lines[-1].startswith("11 more failures in the list above; `--verbose` shows each in full")


def test_identical_failures_are_described_once() -> None:
    same = {"kind": "not_implemented"}
    checks = [CheckResult(n, "error", "not implemented yet: NotImplementedError", dict(same)) for n in ("a", "b", "c")]
    checks.append(CheckResult("d", "fail", "expected 1, got 2"))
    c = console()
    render.render_grade(c, grade("error", checks), verbose=True)
    out = text_of(c)
    assert "ERROR a, b, c" in out
    assert out.count("kind: not_implemented") == 1
    assert "FAIL d" in out


def test_learner_output_is_shown_from_its_head() -> None:
    printed = "".join(f"line {i}\n" for i in range(30))
    c = console()
    render.render_grade(c, grade("pass", output=printed), verbose=True)
    out = text_of(c)
    assert "line 0" in out and "line 19" in out and "line 20" not in out
    assert "10 more" in out
    c = console()
    render.render_grade(c, grade("pass", output=printed))
    out = text_of(c)
    assert "your code printed (30 lines; the first 5):" in out and "line 4" in out and "line 5" not in out


def test_internal_error_banner() -> None:
    c = console()
    render.render_grade(c, grade("error", internal_error=True, message="the grader raised"))
    assert "not a verdict on your code" in text_of(c)


def _bug(name: str, status: str, caught_by: list[str], diagnosed_as: list[str] | None = None) -> BugOutcome:
    diagnosed = [name] if diagnosed_as is None and status != "pass" else diagnosed_as or []
    return BugOutcome(name, f"{name} summary", status, caught_by, diagnosed)


def _report(bugs: list[BugOutcome], *, stub: str = "error", alternatives: list | None = None, problems: list[str] | None = None) -> SelfCheckReport:
    problems = problems if problems is not None else [f"bug {b.name} passes" for b in bugs if b.status == "pass"]
    return SelfCheckReport([ExerciseSelfCheck("adamw", reference="pass", stub=stub, bugs=bugs, alternatives=alternatives or [], problems=problems)])


def test_kill_table_names_the_catching_checks_and_flags_misses() -> None:
    report = _report(
        [_bug("no_bias_correction", "fail", ["lockstep float64", "first step"]), _bug("wrong_decay", "pass", [])],
        alternatives=[VariantOutcome(name="torch_builtin", status="fail", failed=["fp16 grads"])],
    )
    c = console(160)
    render.render_selfcheck(c, report)
    out = text_of(c)
    [caught] = [line for line in out.splitlines() if line.startswith("no_bias_correction")]
    assert "fail ✓" in caught and "lockstep float64, first step" in caught
    [missed] = [line for line in out.splitlines() if line.startswith("wrong_decay")]
    assert "MISSED" in missed
    assert "alternative torch_builtin: fail ✗  failed: fp16 grads" in out
    assert "bug wrong_decay passes" in out
    assert "self-check: FAILED" in out and "bugs caught 1/2" in out and "alternatives passing 0/1" in out
    assert "diagnosis: 1/1 caught bugs diagnosed as themselves alone (100%)" in out


def test_the_diagnosis_column_says_itself_twins_or_not_itself() -> None:
    twins = _bug("m_only", "fail", ["c"], ["m_only", "sqrt_v"])
    twins.identical_to = ["sqrt_v"]
    looser = _bug("zeroed", "fail", ["c"], ["zeroed", "nan"])
    lost = _bug("lost", "fail", ["c"], ["other"])
    assert render.diagnosis_text(_bug("alone", "fail", ["c"])) == "itself"
    assert render.diagnosis_text(twins) == "itself; identical on every check to sqrt_v"
    assert render.diagnosis_text(looser) == "itself; also matches nan (they agree wherever the diagnosis can compare)"
    assert render.diagnosis_text(lost) == "NOT ITSELF: other"
    c = console(200)
    render.render_selfcheck(c, _report([_bug("alone", "fail", ["c"]), twins, lost], problems=["bug lost is not diagnosed as itself"]))
    assert "diagnosis: 1/3 caught bugs diagnosed as themselves alone (33%), 1 as themselves among others (see the table), 1 not as themselves" in text_of(c)


def test_selfcheck_summary_when_all_is_well() -> None:
    c = console(160)
    render.render_selfcheck(c, _report([_bug("b", "error", ["c1"])]))
    out = text_of(c)
    assert "self-check: OK" in out and "references passing 1/1, stubs failing 1/1, bugs caught 1/1" in out
    assert "MISSED" not in out


def test_selfcheck_says_whether_the_sandboxes_were_isolated() -> None:
    """Without namespaces a file could read the bank's solutions: the self-check's summary says so."""
    lines = {}
    for isolated in (True, False, None):
        c = console(300)
        report = _report([_bug("b", "error", ["c1"])])
        report.isolated = isolated
        render.render_selfcheck(c, report)
        lines[isolated] = [line for line in text_of(c).splitlines() if line.startswith("isolation:")]
    assert lines[True] == ["isolation: each sandbox in namespaces of its own; the bank's solutions and graders out of its sight"]
    assert len(lines[False]) == 1 and "NONE here" in lines[False][0] and "could read the bank's solutions" in lines[False][0]
    assert lines[None] == []  # nothing ran in a sandbox (a quiz bank, or every proof from the cache)


def test_the_loops_exercise_table_is_mlprep_lists() -> None:
    exercises = [SimpleNamespace(id=i, title=f"{i} title", kind="code", topic="t", difficulty="easy") for i in ("a", "b")]
    c = console()
    c.print(render.exercise_table(exercises, {"b": "passed"}))
    listed = io.StringIO()
    term.print_exercise_list(term.Out(listed, color=False, width=120), exercises, {"b": "passed"})
    assert text_of(c) == listed.getvalue()
    rows = {line.split()[0]: line.split()[-1] for line in text_of(c).splitlines()[2:]}
    assert rows == {"a": "todo", "b": "passed"}


def test_solution_with_and_without_a_diff(tmp_path: Path) -> None:
    from mlprep.bank import load_bank
    from mlprep.kinds import kind_of

    exercise = load_bank(Path(__file__).parent / "fixtures" / "bank").get("add-one")
    mine = tmp_path / "add_one.py"
    mine.write_text(exercise.reference_path.read_text().replace("+ 1", "+ 2"))
    c = console()
    render.render_shown(c, kind_of(exercise).solution(exercise, mine))
    out = text_of(c)
    assert "+ 1" in out and "-    return x + 2" in out and str(mine) in out
    c = console()
    render.render_shown(c, kind_of(exercise).solution(exercise, None))
    assert "no attempt of yours" in text_of(c)
    mine.write_text(exercise.reference_path.read_text())
    c = console()
    render.render_shown(c, kind_of(exercise).solution(exercise, mine))
    assert "identical to the reference" in text_of(c)


def test_hint_text() -> None:
    c = console()
    c.print(render.hint_text(1, 3, "use [brackets] freely"))
    assert text_of(c).strip() == "hint 2/3: use [brackets] freely"


# -- plain output of the quick commands (mlprep.screen.term) ----------------------------------------------


def test_plain_tables_fit_the_terminal_and_style_only_when_asked() -> None:
    rows = [[("adamw", "bold"), ("a title far too long to fit in forty columns of terminal", ""), term.status_cell("passed")]]
    coloured = io.StringIO()
    term.Out(coloured, color=True, width=40).table(("id", "title", "status"), rows, shrink=1)
    lines = coloured.getvalue().splitlines()
    assert all(term.visible_len(line) <= 40 for line in lines)
    assert lines[2].startswith("\x1b[1madamw\x1b[0m") and "…" in lines[2] and "\x1b[32mpassed\x1b[0m" in lines[2]
    plain = io.StringIO()
    term.Out(plain, color=False, width=40).table(("id", "title", "status"), rows, shrink=1)
    assert "\x1b" not in plain.getvalue() and term.visible_len(coloured.getvalue()) == len(plain.getvalue())


def test_colour_follows_the_terminal_and_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert term.color_enabled(Terminal()) and not term.color_enabled(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not term.color_enabled(Terminal())


@pytest.mark.parametrize("width", [40, 80, 120])
def test_a_failing_input_keeps_its_lines_at_any_width(width: int) -> None:
    """Code is never hard-wrapped: each line of the input comes out whole (the terminal folds a long one),
    so what is copied from the screen pastes into Python and runs."""
    long_call = "knn(np.array([[0.0, 1.5, -2.25], [3.0, 4.0, 5.5]]), np.array([[1.0, 2.0, 3.0]]), 1)  # the second row is nearest through the first"
    failing = f"import math\nX = [{', '.join(str(i / 4) for i in range(30))}]\n{long_call}"
    checks = [CheckResult("k nearest rows", "fail", "expected index 0, got 1 " * 6, {}, 0.1, failing)]
    c = console(width)
    render.render_grade(c, grade("fail", checks, message="1 of 1 checks did not pass"))
    out = text_of(c)
    shown = "\n".join("    " + line for line in failing.splitlines())
    assert shown in out
    pasted = "\n".join(line[4:] for line in out[out.index(shown):].splitlines()[:3])
    compile(pasted, "<pasted>", "exec")
    assert pasted == failing
    wrapped = [line for line in out.splitlines() if "expected index 0" in line]
    assert all(len(line) <= width for line in wrapped)  # the message itself still wraps to the width
