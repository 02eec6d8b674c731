"""The CLI through typer's CliRunner, against the tiny fixture bank (tests/fixtures/bank).

Grading is real (the fixture exercises are pure Python and grade in well under a second); only the
internal-error paths use a fake engine, since a working mlprep cannot be made to fail on purpose.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner, Result

from mlprep.cli import app
from mlprep.errors import ExitStatus
from mlprep.results import CheckResult, GradeResult
from mlprep.progress.store import Store

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("list", "show", "attempt", "watch", "interview", "review", "config", "grade", "hint", "solution", "reset", "progress", "selfcheck")


@pytest.fixture(autouse=True)
def cli_environment(fixture_bank: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps at 80 columns when not on a terminal
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    return fixture_bank


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def stderr_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def attempt_file(home: Path, exercise_id: str) -> Path:
    return home / "workspace" / exercise_id / (exercise_id.replace("-", "_") + ".py")


def reference_source(bank: Path, exercise_id: str) -> str:
    return (bank / "solutions" / exercise_id / "reference.py").read_text()


def stub_source(bank: Path, exercise_id: str) -> str:
    return (bank / "exercises" / exercise_id / "stub.py").read_text()


# -- help, usage, errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0, result.output
    assert f"mlprep {command}" in result.stdout


def test_bare_mlprep_lists_the_commands() -> None:
    result = run()
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.stdout


def test_version() -> None:
    from mlprep import __version__

    result = run("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"mlprep {__version__}"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("lst",), "Did you mean 'list'"),
        (("grade", "--bogus"), "No such option: --bogus"),
        (("list", "--status", "finished"), "'finished' is not one of"),
        (("show",), "Missing argument"),
        (("grade", "add-one", "--timeout", "0"), "must be more than 0"),
        (("grade", "add-one", "--device", "tpu"), "'tpu' is not one of"),
    ],
)
def test_usage_errors_exit_2_with_one_line_on_stderr(args: tuple[str, ...], expected: str) -> None:
    result = run(*args)
    assert result.exit_code == ExitStatus.USAGE
    [line] = stderr_lines(result)
    assert expected in line
    assert result.stdout == ""


def test_unknown_id_suggests_the_closest(cli_environment: Path) -> None:
    result = run("show", "add-on")
    assert result.exit_code == ExitStatus.USAGE
    assert stderr_lines(result) == ["mlprep: error: no exercise 'add-on'; did you mean 'add-one'?"]


def test_a_bug_in_mlprep_is_an_internal_error_with_a_traceback_only_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_bank() -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("mlprep.cli._bank", broken_bank)
    quiet = run("list")
    assert quiet.exit_code == ExitStatus.INTERNAL
    [line] = stderr_lines(quiet)
    assert "internal error (a bug in mlprep" in line and "ZeroDivisionError: boom" in line and "--traceback" in line
    loud = run("--traceback", "list")
    assert loud.exit_code == ExitStatus.INTERNAL
    assert "Traceback (most recent call last)" in loud.stderr and "broken_bank" in loud.stderr


def test_a_corrupt_store_is_one_line_naming_the_file(mlprep_home: Path) -> None:
    mlprep_home.mkdir(parents=True)
    (mlprep_home / "progress.sqlite3").write_bytes(b"garbage, not a database " * 64)
    result = run("list")
    assert result.exit_code == ExitStatus.USAGE
    [line] = stderr_lines(result)
    assert str(mlprep_home / "progress.sqlite3") in line and "move it aside" in line


def test_a_missing_bank_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MLPREP_BANK", str(tmp_path / "nowhere"))
    result = run("list")
    assert result.exit_code == ExitStatus.USAGE
    assert len(stderr_lines(result)) == 1 and "no exercise bank" in result.stderr


# -- list / show -----------------------------------------------------------------------------------


def test_list_table_and_json() -> None:
    table = run("list")
    assert table.exit_code == 0
    assert "add-one" in table.stdout and "reverse-words" in table.stdout and "Reverse the words of a sentence" in table.stdout
    listed = run("list", "--json")
    assert listed.exit_code == 0
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == ["add-one", "reverse-words"]
    assert rows[0] == {"id": "add-one", "title": "Add one", "kind": "code", "topic": "basics", "difficulty": "easy", "status": "todo", "pack": "bank"}


def test_list_filters_by_topic_and_status(mlprep_home: Path) -> None:
    assert [r["id"] for r in json.loads(run("list", "--json", "--topic", "strings").stdout)] == ["reverse-words"]
    assert run("attempt", "reverse-words").exit_code == 0
    assert [r["id"] for r in json.loads(run("list", "--json", "--status", "attempted").stdout)] == ["reverse-words"]
    assert [r["id"] for r in json.loads(run("list", "--json", "--status", "todo").stdout)] == ["add-one"]
    assert json.loads(run("list", "--json", "--status", "passed").stdout) == []
    unknown = run("list", "--topic", "string")
    assert unknown.exit_code == ExitStatus.USAGE and "did you mean 'strings'" in unknown.stderr


def test_list_warns_about_broken_exercises_without_failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_environment: Path) -> None:
    bank = tmp_path / "bank"
    shutil.copytree(cli_environment, bank)
    (bank / "exercises" / "half-done").mkdir()
    (bank / "exercises" / "half-done" / "exercise.toml").write_text('format_version = 1\ntitle = "x"\n')
    monkeypatch.setenv("MLPREP_BANK", str(bank))
    result = run("list", "--json")
    assert result.exit_code == 0
    assert [r["id"] for r in json.loads(result.stdout)] == ["add-one", "reverse-words"]
    [warning] = stderr_lines(result)
    assert "half-done" in warning and "kind" in warning
    shown = run("show", "half-done")
    assert shown.exit_code == ExitStatus.USAGE and "broken" in shown.stderr


def test_show_renders_the_prompt_and_metadata() -> None:
    result = run("show", "reverse-words")
    assert result.exit_code == 0
    assert "Reverse the words" in result.stdout
    assert "def reverse_words(s: str) -> str:" in result.stdout  # the interface block
    assert "strings" in result.stdout and "medium" in result.stdout and "todo" in result.stdout
    assert "mlprep attempt reverse-words" in result.stdout


# -- attempt / reset -------------------------------------------------------------------------------


def test_attempt_writes_the_stub_once_and_never_overwrites(mlprep_home: Path, cli_environment: Path) -> None:
    target = attempt_file(mlprep_home, "add-one")
    first = run("attempt", "add-one")
    assert first.exit_code == 0, first.output
    assert target.read_text() == stub_source(cli_environment, "add-one")
    assert str(target) in first.stdout and "Return the number after" in first.stdout
    target.write_text("my work\n")
    again = run("attempt", "add-one")
    assert again.exit_code == 0
    assert "already have an attempt" in again.stdout and str(target) in again.stdout
    assert "Return the number after" not in again.stdout  # not the whole prompt again: `mlprep show` has it
    assert target.read_text() == "my work\n"
    with Store.open_default() as store:
        recorded = store.latest_attempt("add-one")
    assert recorded is not None and recorded.path == target.resolve()


def test_attempt_in_another_workspace_is_found_by_grade(tmp_path: Path, cli_environment: Path) -> None:
    workspace = tmp_path / "elsewhere"
    assert run("attempt", "add-one", "--workspace", str(workspace)).exit_code == 0
    target = workspace / "add-one" / "add_one.py"
    target.write_text(reference_source(cli_environment, "add-one"))
    result = run("grade", "add-one", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == str(target)
    # A later plain `attempt` points at that attempt instead of starting a second one.
    again = run("attempt", "add-one")
    assert "already have an attempt" in again.stdout and str(target) in again.stdout


def test_attempt_edit_opens_the_editor(tmp_path: Path, mlprep_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "editor.py"
    script.write_text("import sys\nopen(sys.argv[-1], 'a').write('# was edited\\n')\n")
    monkeypatch.setenv("EDITOR", f"'{sys.executable}' '{script}'")
    result = run("attempt", "add-one", "--edit")
    assert result.exit_code == 0, result.output
    assert attempt_file(mlprep_home, "add-one").read_text().endswith("# was edited\n")


def test_attempt_edit_without_an_editor_says_how_and_keeps_the_file(mlprep_home: Path) -> None:
    result = run("attempt", "add-one", "--edit")
    assert result.exit_code == ExitStatus.USAGE
    [line] = stderr_lines(result)
    assert "$VISUAL or $EDITOR" in line and str(attempt_file(mlprep_home, "add-one")) in line
    assert attempt_file(mlprep_home, "add-one").is_file()


def test_reset_restores_the_stub_and_keeps_a_backup(mlprep_home: Path, cli_environment: Path) -> None:
    run("attempt", "add-one")
    target = attempt_file(mlprep_home, "add-one")
    target.write_text("def add_one(x):\n    return 'my precious work'\n")
    result = run("reset", "add-one")
    assert result.exit_code == 0, result.output
    assert target.read_text() == stub_source(cli_environment, "add-one")
    [backup] = list((target.parent / "backups").iterdir())
    assert backup.read_text() == "def add_one(x):\n    return 'my precious work'\n"
    assert str(backup) in result.stdout
    untouched = run("reset", "add-one")
    assert untouched.exit_code == 0 and "nothing to reset" in untouched.stdout
    assert len(list((target.parent / "backups").iterdir())) == 1


def test_reset_of_a_never_attempted_exercise_is_an_error_and_writes_nothing(mlprep_home: Path) -> None:
    result = run("reset", "reverse-words")
    assert result.exit_code == ExitStatus.USAGE
    assert stderr_lines(result) == ["mlprep: error: nothing to reset: reverse-words has no attempt yet; start it with `mlprep attempt reverse-words`"]
    assert not attempt_file(mlprep_home, "reverse-words").exists()
    with Store.open_default() as store:
        assert store.latest_attempt("reverse-words") is None


def test_reset_after_the_file_was_deleted_writes_a_fresh_stub(mlprep_home: Path) -> None:
    run("attempt", "reverse-words")
    attempt_file(mlprep_home, "reverse-words").unlink()
    result = run("reset", "reverse-words")
    assert result.exit_code == 0 and "no file at" in result.stdout
    assert attempt_file(mlprep_home, "reverse-words").is_file()


def test_reset_undo_puts_the_last_backup_back(mlprep_home: Path, cli_environment: Path) -> None:
    run("attempt", "add-one")
    target = attempt_file(mlprep_home, "add-one")
    assert run("reset", "add-one", "--undo").exit_code == ExitStatus.USAGE  # no backup yet
    target.write_text("first try\n")
    run("reset", "add-one")
    target.write_text("second try\n")
    reset = run("reset", "add-one")
    assert "--undo` puts it back" in reset.stdout
    assert target.read_text() == stub_source(cli_environment, "add-one")
    undone = run("reset", "add-one", "--undo")
    assert undone.exit_code == 0, undone.output
    assert target.read_text() == "second try\n"  # the latest backup, not the first
    assert len(list((target.parent / "backups").iterdir())) == 2  # the stub it replaced needs no backup
    target.write_text("third try\n")
    again = run("reset", "add-one", "--undo")
    assert target.read_text() == "second try\n" and "what was there is saved as" in again.stdout  # an undo loses nothing either
    assert sorted(b.read_text() for b in (target.parent / "backups").iterdir()) == ["first try\n", "second try\n", "third try\n"]


# -- grade -----------------------------------------------------------------------------------------


def test_grading_the_stub_fails_and_is_recorded(mlprep_home: Path) -> None:
    run("attempt", "add-one")
    result = run("grade", "add-one")
    assert result.exit_code == ExitStatus.FAILED, result.output
    assert "NotImplementedError" in result.stdout and "small integers" in result.stdout
    with Store.open_default() as store:
        [record] = store.grades()
        checks = store.check_results(record.id)
    assert (record.exercise_id, record.status, record.source) == ("add-one", "error", "workspace")
    assert [c.name for c in checks][1:] == ["small integers", "negative numbers", "floats"]
    assert {c.status for c in checks[1:]} == {"error"}


def test_grade_file_json_has_the_documented_keys(tmp_path: Path, cli_environment: Path, mlprep_home: Path) -> None:
    submission = tmp_path / "mine.py"
    submission.write_text(reference_source(cli_environment, "add-one") + "print('hello from the learner')\n")
    result = run("grade", "add-one", "--file", str(submission), "--json")
    assert result.exit_code == 0, result.output
    graded = json.loads(result.stdout)
    assert {"id", "status", "message", "checks"} <= graded.keys()
    assert graded["id"] == "add-one" and graded["status"] == "pass"
    for check in graded["checks"]:
        assert {"name", "status", "message", "details", "duration_s"} <= check.keys()
        assert check["status"] == "pass"
    assert "hello from the learner" in graded["output"]
    assert not (mlprep_home / "workspace").exists()  # --file never touches the workspace
    with Store.open_default() as store:
        assert store.grades() == []  # nor the progress store, unless asked
    assert run("grade", "add-one", "--file", str(submission), "--record").exit_code == 0
    with Store.open_default() as store:
        [record] = store.grades()
        assert (record.source, record.status, record.path) == ("file", "pass", str(submission))
        assert store.statuses() == {"add-one": "passed"}


def test_grade_table_shows_the_failure_details_and_the_learners_output(tmp_path: Path) -> None:
    submission = tmp_path / "wrong.py"
    submission.write_text("def add_one(x):\n    print('debugging', x)\n    return x + 2\n")
    result = run("grade", "add-one", "--file", str(submission))
    assert result.exit_code == ExitStatus.FAILED
    assert "FAIL" in result.stdout and "add_one(0)" in result.stdout  # the failing scenario
    assert "your code printed" in result.stdout and "debugging 0" in result.stdout


def _cohort(folder: Path, cli_environment: Path) -> dict[str, str]:
    """A course's folder of add-one submissions: correct ones and a hostile one among them."""
    folder.mkdir()
    files = {
        "alice.py": reference_source(cli_environment, "add-one"),
        "bob.py": "def add_one(x):\n    return x + 2\n",
        "carol.py": "import os\nos._exit(7)  # leaves at import\n",
        "dave.py": "def add_one(x):\n    raise SystemExit(0)  # leaves mid-check\n",
        "erin.py": "def add_one(x):\n    print('x' * 10_000_000)\n    return x + 1\n",
        "frank.py": "def add_one(x):\n    return 1 + x\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "notes.txt").write_text("not a submission")
    return {"alice.py": "pass", "bob.py": "fail", "carol.py": "error", "dave.py": "error", "erin.py": "fail", "frank.py": "pass"}


def test_batch_grading_gives_every_file_its_own_verdict(tmp_path: Path, cli_environment: Path) -> None:
    expected = _cohort(tmp_path / "cohort", cli_environment)
    result = run("grade", "add-one", "--dir", str(tmp_path / "cohort"), "--json", "--junit", str(tmp_path / "junit.xml"))
    assert result.exit_code == ExitStatus.FAILED, result.output
    graded = json.loads(result.stdout)
    assert {Path(g["path"]).name: g["status"] for g in graded} == expected
    assert [Path(g["path"]).name for g in graded] == sorted(expected)  # in the folder's sorted order
    suites = ET.parse(tmp_path / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [f"add-one {tmp_path / 'cohort' / name}" for name in sorted(expected)]
    with Store.open_default() as store:
        assert store.grades() == []  # files are not the learner's attempts: nothing recorded unless asked
    plain = run("grade", "add-one", "--file", str(tmp_path / "cohort" / "alice.py"), "--file", str(tmp_path / "cohort" / "bob.py"), "--record")
    assert plain.exit_code == ExitStatus.FAILED
    assert re.search(r"^pass +add-one +\S+alice\.py +all 4 checks passed", plain.stdout, re.M), plain.stdout
    assert "1 of 2 files passed" in plain.stdout
    with Store.open_default() as store:
        assert sorted((Path(g.path).name, g.source) for g in store.grades()) == [("alice.py", "file"), ("bob.py", "file")]


def test_shards_split_the_files_into_slices_that_cover_them_once(tmp_path: Path, cli_environment: Path) -> None:
    expected = _cohort(tmp_path / "cohort", cli_environment)
    seen = []
    for k in (1, 2, 3, 4):
        result = run("grade", "add-one", "--dir", str(tmp_path / "cohort"), "--shard", f"{k}/4", "--json")
        seen.append([Path(g["path"]).name for g in json.loads(result.stdout)])
    assert sorted(name for part in seen for name in part) == sorted(expected)
    assert seen == [sorted(expected)[k::4] for k in range(4)]  # the same slices on every machine
    again = run("grade", "add-one", "--dir", str(tmp_path / "cohort"), "--shard", "2/4", "--json")
    assert [Path(g["path"]).name for g in json.loads(again.stdout)] == seen[1]
    for bad in ("0/4", "5/4", "two"):
        assert run("grade", "add-one", "--dir", str(tmp_path / "cohort"), "--shard", bad).exit_code == ExitStatus.USAGE
    assert "--shard slices the files" in run("grade", "add-one", "--shard", "1/2").stderr


def test_grade_file_errors(tmp_path: Path) -> None:
    missing = run("grade", "add-one", "--file", str(tmp_path / "nope.py"))
    assert missing.exit_code == ExitStatus.USAGE
    assert stderr_lines(missing) == [f"mlprep: error: no such file: {tmp_path / 'nope.py'}"]
    (tmp_path / "f.py").write_text("")
    two = run("grade", "add-one", "reverse-words", "--file", str(tmp_path / "f.py"))
    assert two.exit_code == ExitStatus.USAGE and "exactly one exercise" in two.stderr
    none = run("grade", "--file", str(tmp_path / "f.py"))
    assert none.exit_code == ExitStatus.USAGE and "exactly one exercise" in none.stderr


def test_grade_without_attempts_says_how_to_start() -> None:
    everything = run("grade")
    assert everything.exit_code == ExitStatus.USAGE and "mlprep attempt ID" in everything.stderr
    one = run("grade", "add-one")
    assert one.exit_code == ExitStatus.USAGE and "mlprep attempt add-one" in one.stderr


def test_grade_with_no_id_grades_every_attempt_and_writes_junit(tmp_path: Path, mlprep_home: Path, cli_environment: Path) -> None:
    run("attempt", "add-one")
    run("attempt", "reverse-words")
    attempt_file(mlprep_home, "reverse-words").write_text(reference_source(cli_environment, "reverse-words"))
    junit = tmp_path / "reports" / "junit.xml"
    result = run("grade", "--json", "--junit", str(junit))
    assert result.exit_code == ExitStatus.FAILED, result.output
    graded = json.loads(result.stdout)
    assert [(g["id"], g["status"]) for g in graded] == [("add-one", "error"), ("reverse-words", "pass")]
    suites = ET.parse(junit).getroot()
    assert [s.get("name") for s in suites] == ["add-one", "reverse-words"]
    assert suites[0].get("errors") == "3" and suites[1].get("errors") == "0"
    assert json.loads(run("list", "--json", "--status", "passed").stdout)[0]["id"] == "reverse-words"


def _fake_engine(monkeypatch: pytest.MonkeyPatch, result: GradeResult) -> list[dict]:
    calls: list[dict] = []

    def grade_file(exercise, path, *, device="auto", timeout_s=None):
        calls.append({"id": exercise.id, "path": path, "device": device, "timeout_s": timeout_s})
        return result

    from mlprep.grading.engine import require_device

    monkeypatch.setitem(sys.modules, "mlprep.grading.engine", types.SimpleNamespace(grade_file=grade_file, require_device=require_device))
    return calls


def test_grade_passes_device_and_timeout_to_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_engine(monkeypatch, GradeResult("add-one", "pass", "all 1 checks passed", [CheckResult("c", "pass")]))
    (tmp_path / "f.py").write_text("")
    result = run("grade", "add-one", "--file", str(tmp_path / "f.py"), "--device", "cpu", "--timeout", "2.5")
    assert result.exit_code == 0
    assert calls == [{"id": "add-one", "path": tmp_path / "f.py", "device": "cpu", "timeout_s": 2.5}]


def test_an_internal_grading_error_is_mlpreps_fault_not_the_learners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = GradeResult("add-one", "error", "the grader raised KeyError: 'x'", [CheckResult("small integers", "error", "grader defect")], internal_error=True)
    _fake_engine(monkeypatch, broken)
    (tmp_path / "f.py").write_text("")
    result = run("grade", "add-one", "--file", str(tmp_path / "f.py"), "--record")
    assert result.exit_code == ExitStatus.INTERNAL
    assert "not your code" in result.stderr and "KeyError" in result.stderr
    assert "not a verdict on your code" in result.stdout
    with Store.open_default() as store:
        assert store.statuses() == {}  # an internal error is neither a pass nor an attempt's failure
        [record] = store.grades()
        assert record.internal_error



def test_grade_all_skips_an_attempt_whose_file_is_gone(mlprep_home: Path, cli_environment: Path) -> None:
    run("attempt", "add-one")
    run("attempt", "reverse-words")
    attempt_file(mlprep_home, "add-one").unlink()
    attempt_file(mlprep_home, "reverse-words").write_text(reference_source(cli_environment, "reverse-words"))
    result = run("grade", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["id"] == "reverse-words"  # one graded: an object, not a list
    [warning] = stderr_lines(result)
    assert "skipping 'add-one'" in warning and "mlprep reset add-one" in warning

# -- hint / solution / progress --------------------------------------------------------------------


def test_hints_are_progressive_and_remembered() -> None:
    first, second, third, after = (run("hint", "add-one") for _ in range(4))
    assert "hint 1/3" in first.stdout and "Think about what" in first.stdout and "2 more" in first.stdout
    assert "hint 2/3" in second.stdout and "Use the + operator" in second.stdout
    assert "hint 3/3" in third.stdout and "last hint" in third.stdout
    assert after.exit_code == 0 and "all 3 hints" in after.stdout
    assert "hint 1/3" in after.stdout and "hint 3/3" in after.stdout
    assert "hint 1/3" in run("hint", "reverse-words").stdout  # counted per exercise
    with Store.open_default() as store:
        assert store.hints_shown() == {"add-one": 3, "reverse-words": 1}


def test_solution_is_refused_until_passed_unless_forced(mlprep_home: Path, cli_environment: Path) -> None:
    refused = run("solution", "add-one")
    assert refused.exit_code == ExitStatus.USAGE
    [line] = stderr_lines(refused)
    assert "mlprep solution add-one --force" in line
    assert "return x + 1" not in refused.stdout
    forced = run("solution", "add-one", "--force")
    assert forced.exit_code == 0 and "return x + 1" in forced.stdout
    with Store.open_default() as store:
        assert [(r.exercise_id, r.forced) for r in store.reveals()] == [("add-one", True)]


def test_solution_after_passing_shows_a_diff_against_the_attempt(mlprep_home: Path, cli_environment: Path) -> None:
    run("attempt", "add-one")
    mine = "def add_one(x):\n    \"\"\"x + 1, for an int or a float.\"\"\"\n    return 1 + x  # my way\n"
    attempt_file(mlprep_home, "add-one").write_text(mine)
    assert run("grade", "add-one").exit_code == 0
    result = run("solution", "add-one")
    assert result.exit_code == 0, result.output
    assert "-    return 1 + x  # my way" in result.stdout and "+    return x + 1" in result.stdout
    with Store.open_default() as store:
        assert [(r.exercise_id, r.forced) for r in store.reveals()] == [("add-one", False)]


def test_progress_counts_topics_history_hints_and_reveals(mlprep_home: Path, cli_environment: Path) -> None:
    empty = run("progress")
    assert empty.exit_code == 0 and "no grades yet" in empty.stdout
    run("attempt", "add-one")
    attempt_file(mlprep_home, "add-one").write_text(reference_source(cli_environment, "add-one"))
    run("grade", "add-one")
    run("attempt", "reverse-words")
    run("hint", "reverse-words")
    run("solution", "reverse-words", "--force")
    result = run("progress")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()

    def row(first_cell: str) -> list[str]:
        [line] = [line for line in lines if line.startswith(first_cell + " ")]
        return re.split(r"\s{2,}", line.strip(), maxsplit=6)  # columns are two or more spaces apart; the bar is the 7th

    # topic | passed | attempted | todo | total | time | mastery bar
    assert row("basics")[:5] == ["basics", "1", "0", "0", "1"]
    assert row("strings")[:5] == ["strings", "0", "1", "0", "1"]
    assert row("all")[:5] == ["all", "1", "1", "0", "2"]
    assert row("basics")[6] == "█" * 12 + " 100%" and row("strings")[6] == "░" * 12 + "   0%" and row("all")[6] == "█" * 6 + "░" * 6 + "  50%"
    assert "streak: 1 day (longest 1)" in result.stdout
    assert any("add-one" in line and "pass" in line and "4/4" in line for line in lines)
    assert "hints used: 1" in result.stdout and "reverse-words 1/3" in result.stdout
    assert "solutions revealed: 1" in result.stdout and "before passing: reverse-words" in result.stdout


# -- selfcheck -------------------------------------------------------------------------------------


def test_selfcheck_on_the_fixture_bank_prints_the_kill_table(tmp_path: Path) -> None:
    result = run("selfcheck", "--verbose", "--report", str(tmp_path / "report.json"))
    assert result.exit_code == 0, result.output
    assert "adds_two" in result.stdout and "keeps_order" in result.stdout
    assert "small integers" in result.stdout  # a check named in the "caught by" column
    assert "bugs caught 2/2" in result.stdout
    assert re.search(r"^9 submissions graded in \d+\.\ds$", result.stdout, re.M)  # the total time
    report = json.loads((tmp_path / "report.json").read_text())
    grades = {e["id"]: e["grades"] for e in report["exercises"]}
    assert grades["add-one"]["bug adds_two"]["status"] == "fail" and grades["add-one"]["reference"]["status"] == "pass"


def test_selfcheck_says_one_line_per_exercise_unless_verbose() -> None:
    result = run("selfcheck")
    assert result.exit_code == 0, result.output
    assert "adds_two" not in result.stdout  # no kill table where nothing is wrong
    assert re.search(r"^add-one +ok +bugs 1/1 · diagnosed 1/1 · alternatives 1/1$", result.stdout, re.M)
    from mlprep.grading._isolation import available

    assert ("isolation: each sandbox in namespaces of its own" in result.stdout) == available()
    assert ("isolation: NONE here" in result.stdout) == (not available())
    assert "self-check: OK" in result.stdout and len(result.stdout.splitlines()) < 10
    assert "--report" not in result.stdout and "grades" not in json.loads(run("selfcheck", "--json").stdout)["exercises"][0]


def test_selfcheck_json_and_a_missed_bug_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_environment: Path) -> None:
    bank = tmp_path / "bank"
    shutil.copytree(cli_environment, bank)
    bugs = bank / "solutions" / "reverse-words" / "bugs.toml"
    bugs.write_text(bugs.read_text() + '\n[[bug]]\nname = "harmless"\nsummary = "only edits a comment"\n'
                    '[[bug.edit]]\nold = "# split() with no separator"\nnew = "# split() without a separator"\n')
    monkeypatch.setenv("MLPREP_BANK", str(bank))
    result = run("selfcheck", "reverse-words", "--json")
    assert result.exit_code == ExitStatus.FAILED, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    [exercise] = report["exercises"]
    assert exercise["id"] == "reverse-words" and exercise["reference"] == "pass" and exercise["stub"] != "pass"
    statuses = {b["name"]: (b["status"], b["caught_by"]) for b in exercise["bugs"]}
    assert statuses["harmless"] == ("pass", [])
    assert statuses["keeps_order"][0] == "fail" and statuses["keeps_order"][1]
    table = run("selfcheck", "reverse-words")
    assert table.exit_code == ExitStatus.FAILED and "MISSED" in table.stdout


def test_selfcheck_unknown_id() -> None:
    result = run("selfcheck", "add-onee")
    assert result.exit_code == ExitStatus.USAGE and "did you mean 'add-one'" in result.stderr



def test_selfcheck_passes_options_through_and_a_broken_exercise_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_environment: Path) -> None:
    calls: list[tuple] = []

    from mlprep.kinds import selfcheck
    from mlprep.kinds.proof import ExerciseSelfCheck

    def run_selfcheck(bank, ids=None, *, device="auto", changed_only=False, on_planned=None, on_result=None):
        calls.append((ids, device, changed_only))
        on_planned(1)
        on_result("add-one", "reference", GradeResult("add-one", "pass", "", [], duration_s=0.5))
        return selfcheck.SelfCheckReport([ExerciseSelfCheck("add-one", reference="pass", stub="error")] if ids else [], submissions=1, wall_s=0.5)

    monkeypatch.setattr(selfcheck, "run_selfcheck", run_selfcheck)
    fine = run("selfcheck", "add-one", "--device", "cpu", "--changed")
    assert fine.exit_code == 0, fine.output
    assert calls == [(["add-one"], "cpu", True)]
    bank = tmp_path / "bank"
    shutil.copytree(cli_environment, bank)
    (bank / "exercises" / "half-done").mkdir()
    monkeypatch.setenv("MLPREP_BANK", str(bank))
    broken = run("selfcheck", "--json")
    assert broken.exit_code == ExitStatus.FAILED
    assert json.loads(broken.stdout) == {"ok": False, "submissions": 1, "wall_s": 0.5, "isolated": None, "exercises": [],
                                         "broken": [{"id": "half-done", "reason": "no exercise.toml"}]}
    assert "half-done" in broken.stderr and "no exercise.toml" in broken.stderr

# -- import weight ---------------------------------------------------------------------------------


def test_light_commands_never_import_numpy_or_torch(tmp_path: Path, cli_environment: Path) -> None:
    """The quick commands (issue 4's speed targets) do not even import rich: see mlprep.term."""
    script = """
import sys
from typer.testing import CliRunner
from mlprep.cli import app
runner = CliRunner()
for args in (["list"], ["show", "add-one"], ["attempt", "add-one"], ["hint", "add-one"], ["progress"], ["list", "--json"]):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
print("rich after the quick commands:", "rich" in sys.modules)
for args in (["reset", "add-one"], ["solution", "add-one", "--force"], ["review", "--list"], ["config"]):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
heavy = sorted(m for m in ("numpy", "torch", "mlprep.grading.engine", "mlprep.grading") if m in sys.modules)
print("heavy:", heavy)
"""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MLPREP_BANK": str(cli_environment), "MLPREP_HOME": str(tmp_path / "home")}
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().splitlines()[-1] == "heavy: []"  # rich, once: `show` renders each prompt's Markdown with it, then caches it
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-2:] == ["rich after the quick commands: False", "heavy: []"]


def test_list_and_progress_load_no_kind_of_exercise_and_no_grade_record(tmp_path: Path, cli_environment: Path) -> None:
    """`list` and `progress` print from the bank's metadata and the store: the modules of the kinds (and of
    grade results) are for the commands about one exercise (issue 28's start-up target)."""
    script = """
import sys
from mlprep.cli import main
for args in (["list"], ["progress"]):
    try:
        main(args)
    except SystemExit as done:
        assert done.code in (0, None), (args, done.code)
print("loaded:", sorted(m for m in sys.modules if m.startswith(("mlprep.kinds.", "mlprep.results", "mlprep.grading"))))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MLPREP_BANK": str(cli_environment), "MLPREP_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "loaded: ['mlprep.kinds.base']"


# -- the practice loop's commands (the loop itself: tests/test_loop_terminal.py) -------------------


def test_config_sets_gets_and_unsets(mlprep_home: Path) -> None:
    assert run("config").stdout.count("(not set)") == 2
    assert run("config", "editor", "code -w").exit_code == 0
    assert run("config", "auto_edit", "true").exit_code == 0
    assert run("config", "editor").stdout == "code -w\n"
    assert run("config", "auto_edit").stdout == "true\n"
    assert (mlprep_home / "config.toml").read_text() == 'editor = "code -w"\nauto_edit = true\n'
    assert run("config", "editor", "--unset").exit_code == 0
    assert run("config", "editor").stdout == ""
    bad = run("config", "colour", "red")
    assert bad.exit_code == ExitStatus.USAGE and stderr_lines(bad) == ["mlprep: error: no setting 'colour'; settings: editor, auto_edit"]


def test_the_editor_setting_wins_over_editor_and_auto_edit_opens_it(tmp_path: Path, mlprep_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "editor.py"
    script.write_text("import sys\nopen(sys.argv[-1], 'a').write('# ' + sys.argv[1] + '\\n')\n")
    monkeypatch.setenv("EDITOR", f"'{sys.executable}' '{script}' from-env")
    run("config", "editor", f"'{sys.executable}' '{script}' from-setting")
    run("config", "auto_edit", "true")
    result = run("attempt", "add-one")
    assert result.exit_code == 0, result.output
    assert attempt_file(mlprep_home, "add-one").read_text().endswith("# from-setting\n")


def test_review_list_shows_the_schedule(mlprep_home: Path, cli_environment: Path) -> None:
    empty = run("review", "--list")
    assert empty.exit_code == 0 and "nothing is due for review" in empty.stdout
    run("attempt", "add-one")
    run("grade", "add-one")  # the stub fails: back for review in a day
    listed = run("review", "--list")
    assert listed.exit_code == 0, listed.output
    [line] = [line for line in listed.stdout.splitlines() if line.startswith("add-one")]
    assert "code" in line and "in 24 h" in line and "its latest grade did not pass" in line
    assert "nothing is due" in listed.stdout
    assert run("review").stdout == listed.stdout  # nothing due: no loop, the same schedule


def test_progress_shows_practice_time_and_the_interview_history(mlprep_home: Path) -> None:
    from datetime import UTC, datetime

    from mlprep.progress.store import Interview, InterviewItem

    with Store.open_default() as store:
        store.record_practice_time("add-one", "watch", datetime.now(UTC), 125.0)
        store.record_interview(Interview(
            "2030-05-01T09:00:00+00:00", "2030-05-01T09:45:00+00:00", 45.0, 7, None, "time", "/x",
            (InterviewItem("add-one", "code", "pass", (), 60.0, 0, None), InterviewItem("reverse-words", "code", "fail", ("floats",), 90.0, 1, None)),
        ))
    result = run("progress")
    assert result.exit_code == 0, result.output
    [basics] = [line for line in result.stdout.splitlines() if line.startswith("basics ")]
    assert "2m 05s" in basics
    [interview] = [line for line in result.stdout.splitlines() if line.startswith("2030-05-01T09:00:00")]
    assert "1/2" in interview and "time up" in interview and "add-one, reverse-words" in interview
    assert "time practised: 2m 05s" in result.stdout


def test_time_practised_counts_attempt_edit_grade_from_the_cli(mlprep_home: Path, cli_environment: Path) -> None:
    import sqlite3
    from datetime import UTC, datetime, timedelta

    from mlprep.progress.standing import practice_time

    run("attempt", "add-one")
    ten_minutes_ago = (datetime.now(UTC) - timedelta(minutes=10)).isoformat(timespec="seconds")
    with sqlite3.connect(mlprep_home / "progress.sqlite3") as db:  # the attempt started ten minutes ago
        db.execute("UPDATE attempts SET started_at = ?", (ten_minutes_ago,))
    attempt_file(mlprep_home, "add-one").write_text(reference_source(cli_environment, "add-one"))
    assert run("grade", "add-one").exit_code == 0
    progress = run("progress")
    [line] = [line for line in progress.stdout.splitlines() if "time practised:" in line]
    minutes = re.search(r"time practised: (\d+)m", line)
    assert minutes and 9 <= int(minutes.group(1)) <= 11, line
    with sqlite3.connect(mlprep_home / "progress.sqlite3") as db:  # a day-long gap counts as a break, not as practice
        db.execute("UPDATE grades SET graded_at = ?", ((datetime.now(UTC) - timedelta(days=1)).isoformat(timespec="seconds"),))
        db.execute("UPDATE attempts SET started_at = ?", ((datetime.now(UTC) - timedelta(days=1, minutes=20)).isoformat(timespec="seconds"),))
        db.execute("UPDATE practice_time SET started_at = ?", ((datetime.now(UTC) - timedelta(days=1, minutes=10)).isoformat(timespec="seconds"),))
    os.utime(attempt_file(mlprep_home, "add-one"))  # worked on again since
    run("grade", "add-one")
    with Store.open_default() as store:
        assert 29 * 60 <= practice_time(store.practice_intervals())[0] <= 31 * 60  # 10 minutes, then the 20-minute cap
    run("grade", "add-one")  # graded again, unchanged: no more practice
    with Store.open_default() as store:
        assert 29 * 60 <= practice_time(store.practice_intervals())[0] <= 31 * 60


def test_plurals_and_an_interview_asked_for_more_exercises_than_there_are() -> None:
    from mlprep.text import plural

    assert [plural(1, "minute"), plural(2, "minute"), plural(0.5, "day"), plural(1, "day")] == ["1 minute", "2 minutes", "0.5 days", "1 day"]
    result = run("interview", "--count", "9", "--minutes", "0.01", "--manual-run")
    assert "--count 9: only 2 exercises in the bank; the interview has 2" in result.stderr


def test_review_ahead_brings_back_what_is_due_soon(mlprep_home: Path) -> None:
    run("attempt", "add-one")
    run("grade", "add-one")  # failed: due in a day
    assert "nothing is due for review" in run("review", "--list").stdout
    ahead = run("review", "--list", "--ahead", "2")
    assert ahead.exit_code == 0 and "nothing is due" not in ahead.stdout
    assert "nothing is due for review within 0.5 days" in run("review", "--list", "--ahead", "0.5").stdout


def test_device_cuda_without_a_gpu_is_a_usage_error(mlprep_home: Path, monkeypatch: pytest.MonkeyPatch, cli_environment: Path) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    run("attempt", "add-one")
    attempt_file(mlprep_home, "add-one").write_text(reference_source(cli_environment, "add-one"))
    for args in (("grade", "add-one"), ("selfcheck", "add-one")):
        result = run(*args, "--device", "cuda")
        assert result.exit_code == ExitStatus.USAGE, result.output
        assert stderr_lines(result) == ["mlprep: error: --device cuda: no GPU is visible here (torch.cuda.is_available() is False); "
                                        "--device auto runs the CPU scenarios and reports the CUDA ones as skipped"]
    with Store.open_default() as store:
        assert store.grades() == []  # nothing graded, nothing recorded


def test_quick_commands_wrap_at_word_boundaries_to_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    run("attempt", "add-one")
    listed = run("list").stdout.splitlines()
    assert all(len(line) <= 60 for line in listed), listed
    assert listed[0].split() == ["id", "title", "kind", "topic", "difficulty", "status"] or "topic" not in listed[0]
    assert any(line.rstrip().endswith("attempted") for line in listed)  # never `attempt` / `ed`
    monkeypatch.setenv("COLUMNS", "30")
    narrow = run("list").stdout.splitlines()
    assert all(len(line) <= 30 for line in narrow) and narrow[0].split()[0] == "id" and narrow[0].split()[-1] == "status", narrow
    monkeypatch.setenv("COLUMNS", "24")
    from mlprep.bank import load_bank

    hints = load_bank().get("reverse-words").hints
    shown = run("hint", "reverse-words").stdout.splitlines()
    assert all(len(line) <= 24 for line in shown), shown
    assert " ".join(" ".join(shown).split()).startswith(f"hint 1/{len(hints)}: " + " ".join(hints[0].split()) + " (2 more")  # every word whole


def test_show_renders_the_prompts_markdown(monkeypatch: pytest.MonkeyPatch, cli_environment: Path) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    result = run("show", "add-one")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 50 for line in lines), lines
    prompt = (cli_environment / "exercises" / "add-one" / "prompt.md").read_text()
    assert "```" in prompt and "```" not in result.stdout and "`" not in result.stdout  # fences and code spans rendered
    assert run("show", "add-one").stdout == result.stdout  # the second time from the cache, the same


def test_interview_and_watch_usage_errors() -> None:
    topic = run("interview", "--topic", "basic")
    assert topic.exit_code == ExitStatus.USAGE and "did you mean 'basics'" in topic.stderr
    minutes = run("interview", "--minutes", "0")
    assert minutes.exit_code == ExitStatus.USAGE and "must be more than 0" in minutes.stderr
    unknown = run("watch", "add-on")
    assert unknown.exit_code == ExitStatus.USAGE and "did you mean 'add-one'" in unknown.stderr


# -- shell completion ------------------------------------------------------------------------------


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o default -F _mlprep_completion mlprep"), ("zsh", "#compdef mlprep"),
                                               ("fish", "complete --command mlprep")])
def test_completion_scripts_for_bash_zsh_and_fish(shell: str, marker: str, cli_environment: Path) -> None:
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "PYTHONPATH": str(REPO), "MLPREP_BANK": str(cli_environment)}
    done = subprocess.run([sys.executable, "-m", "mlprep", "--show-completion", shell], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout and "_MLPREP_COMPLETE" in done.stdout


def test_completion_offers_the_banks_exercise_ids(cli_environment: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MLPREP_BANK": str(cli_environment), "MLPREP_HOME": str(tmp_path)}
    bash = subprocess.run([sys.executable, "-m", "mlprep"], capture_output=True, text=True, timeout=60,
                          env={**env, "_MLPREP_COMPLETE": "complete_bash", "COMP_WORDS": "mlprep attempt re", "COMP_CWORD": "2"})
    assert bash.stdout.split() == ["reverse-words"]
    every = subprocess.run([sys.executable, "-m", "mlprep"], capture_output=True, text=True, timeout=60,
                           env={**env, "_MLPREP_COMPLETE": "complete_bash", "COMP_WORDS": "mlprep grade ", "COMP_CWORD": "2"})
    assert every.stdout.split() == ["add-one", "reverse-words"]
    zsh = subprocess.run([sys.executable, "-m", "mlprep"], capture_output=True, text=True, timeout=60,
                         env={**env, "_MLPREP_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "mlprep show ad"})
    assert '"add-one":"Add one"' in zsh.stdout  # with the title as the description
    options = subprocess.run([sys.executable, "-m", "mlprep"], capture_output=True, text=True, timeout=60,
                             env={**env, "_MLPREP_COMPLETE": "complete_bash", "COMP_WORDS": "mlprep grade --de", "COMP_CWORD": "2"})
    assert options.stdout.split() == ["--device"]


def test_progress_fits_80_columns_without_breaking_a_word(mlprep_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [f"a-long-exercise-name-{i}" for i in range(12)]
    with Store.open_default() as store:
        for exercise_id in ids:
            store.take_hint(exercise_id, 3)
            store.record_diagnosis(exercise_id, ["some_mistake"])
            store.record_reveal(exercise_id, forced=True)
            store.record_grade(GradeResult(exercise_id, "fail", "m", [CheckResult("c", "fail")], device="cpu"), source="workspace", path=None)
    monkeypatch.setenv("COLUMNS", "80")
    out = run("progress").stdout
    assert [line for line in out.splitlines() if len(line) > 80] == []
    for exercise_id in ids:  # each name whole, in the hints and the reveals
        assert out.count(exercise_id) >= 2, exercise_id
