"""Progress and work survive anything: concurrent grades, a SIGKILL mid-grade, broken environments
(read-only or missing folders, a corrupt store, a broken bank exercise), and usage errors are one
line with exit code 2 and a suggestion. The grades run through the real CLI in subprocesses, against
the fast NumPy exercise `add` of tests/fixtures/runner_bank; the usage errors through CliRunner."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from mlprep_process import FIXTURES, RUNNER_BANK, integrity, kill_processes_of, processes_naming, processes_of, run_mlprep, start_mlprep, wait_until
from typer.testing import CliRunner

from mlprep.cli import app
from mlprep.errors import ExitStatus
from mlprep.progress.store import MIGRATIONS, Store

REPO = Path(__file__).resolve().parents[1]
CORRECT = FIXTURES / "submissions" / "correct.py"
# At import, the sandbox becomes a shell that sleeps, named after this file: mid-grade, and findable.
SLEEPER = """import os
os.execv("/bin/sh", ["sh", "-c", "sleep 120; exit 0", os.path.abspath(__file__)])

def add(a, b):
    return a + b
"""


@pytest.fixture
def home(mlprep_home: Path):
    """This test's MLPREP_HOME; whatever its mlprep processes leave running is killed afterwards."""
    yield mlprep_home
    kill_processes_of(mlprep_home)


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# -- concurrency and crashes -----------------------------------------------------------------------


def test_eight_grades_at_once_are_all_recorded(home: Path) -> None:
    graders = [start_mlprep(["grade", "add", "--file", str(CORRECT), "--json", "--record"], home) for _ in range(8)]
    outcomes = [(p.communicate(timeout=120), p.returncode) for p in graders]
    assert [code for _, code in outcomes] == [0] * 8, [err for (_, err), _ in outcomes]
    assert all(json.loads(out)["status"] == "pass" for (out, _), _ in outcomes)
    assert integrity(home / "progress.sqlite3") == [("ok",)]
    with Store(home / "progress.sqlite3") as store:
        grades = store.grades("add")
        assert len(grades) == 8 and {g.status for g in grades} == {"pass"}
        assert all(len(store.check_results(g.id)) == 4 for g in grades)  # each grade's checks landed with it


def _attempt_with(home: Path, source: str) -> Path:
    code, _, stderr, _ = run_mlprep(["attempt", "add"], home)
    assert code == 0, stderr
    attempt = home / "workspace" / "add" / "add.py"
    attempt.write_text(source)
    return attempt


def test_sigkill_mid_grade_keeps_the_store_and_the_attempt(home: Path) -> None:
    attempt = _attempt_with(home, SLEEPER)
    before = attempt.read_bytes()
    grading = start_mlprep(["grade", "add"], home)
    wait_until(lambda: processes_naming(attempt), "the sandbox imports the attempt")  # mid-grade
    os.killpg(grading.pid, signal.SIGKILL)
    grading.communicate()
    assert grading.returncode == -signal.SIGKILL
    assert attempt.read_bytes() == before
    assert integrity(home / "progress.sqlite3") == [("ok",)]
    code, out, _, _ = run_mlprep(["progress"], home)
    assert code == 0 and "attempts started: 1" in out


def test_sigkill_mid_grade_leaves_no_sandbox_running(home: Path) -> None:
    attempt = _attempt_with(home, SLEEPER)
    grading = start_mlprep(["grade", "add"], home)
    wait_until(lambda: processes_naming(attempt), "the sandbox imports the attempt")
    os.killpg(grading.pid, signal.SIGKILL)
    grading.communicate()
    deadline = time.monotonic() + 3
    while processes_of(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_of(home) == []


def test_sigkill_at_random_moments_never_damages_the_store(home: Path) -> None:
    """Kills land anywhere: opening the store, grading, recording the grade, printing."""
    rng = random.Random(5)
    for _ in range(6):
        grading = start_mlprep(["grade", "add", "--file", str(CORRECT), "--record"], home)
        time.sleep(rng.uniform(0.0, 1.0))
        os.killpg(grading.pid, signal.SIGKILL)
        grading.communicate()
        kill_processes_of(home)
        if (home / "progress.sqlite3").exists():
            assert integrity(home / "progress.sqlite3") == [("ok",)]
    code, _, stderr, _ = run_mlprep(["grade", "add", "--file", str(CORRECT), "--record"], home)
    assert code == 0, stderr


def test_a_failed_reset_leaves_the_attempt_whole(home: Path, monkeypatch: pytest.MonkeyPatch, fixture_bank: Path) -> None:
    """`reset` replaces the attempt by os.replace of a complete temporary file: if that fails, the
    attempt is untouched and the backup already complete."""
    assert CliRunner().invoke(app, ["attempt", "add-one"]).exit_code == 0
    attempt = home / "workspace" / "add-one" / "add_one.py"
    attempt.write_text("def add_one(x):\n    return x + 1  # my work\n")

    def full_disk(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("mlprep.workspace.os.replace", full_disk)
    result = CliRunner().invoke(app, ["reset", "add-one"])
    assert result.exit_code == ExitStatus.USAGE and "No space left on device" in one_error_line(result.stderr)
    assert attempt.read_text() == "def add_one(x):\n    return x + 1  # my work\n"
    [backup] = (attempt.parent / "backups").iterdir()
    assert backup.read_text() == attempt.read_text()
    assert [p.name for p in attempt.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_every_file_mlprep_writes_goes_through_atomic_replace() -> None:
    """An audit: no module of mlprep writes a file in place; the one write allowed is
    workspace._write_temp's, into the fresh mkstemp file that atomic_write and atomic_create then
    rename or link. (The sandbox, the self-check and the diagnosis, which grades the known mistakes,
    write only into their own temporary folders.)"""
    in_place = re.compile(r"\.write_text\(|\.write_bytes\(|open\([^)]*['\"][wax]b?['\"]")
    mkstemp_file = 'with os.fdopen(fd, "wb") as handle:'
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / "mlprep").rglob("*.py"))
        if path.name not in ("selfcheck.py", "diagnosis.py") and "grading" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if in_place.search(line) and line.strip() != mkstemp_file
    ]
    assert offenders == []


# -- broken environments ---------------------------------------------------------------------------


@pytest.fixture
def read_only(tmp_path: Path):
    """Make folders read-only for real: permission bits, and for root (who ignores them) the
    immutable attribute; both undone afterwards so pytest can clean up."""
    made: list[Path] = []

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o555)
        if os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            pytest.skip("running as root without chattr: cannot make a folder read-only")
        made.append(folder)
        return folder

    yield make
    for folder in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)


def test_a_read_only_workspace_is_one_line_and_the_default_still_works(home: Path, tmp_path: Path, read_only) -> None:
    locked = read_only(tmp_path / "locked")
    code, _, stderr, _ = run_mlprep(["attempt", "add", "--workspace", str(locked)], home)
    assert code == ExitStatus.USAGE and f"cannot write {locked / 'add' / 'add.py'}" in one_error_line(stderr)
    code, out, stderr, _ = run_mlprep(["attempt", "add"], home)
    assert code == 0 and "wrote the stub" in out, stderr


def test_a_read_only_attempt_folder_keeps_the_attempt_on_reset(home: Path, read_only) -> None:
    attempt = _attempt_with(home, "def add(a, b):\n    return a + b  # mine\n")
    read_only(attempt.parent)
    code, _, stderr, _ = run_mlprep(["reset", "add"], home)
    assert code == ExitStatus.USAGE and "cannot reset" in one_error_line(stderr)
    assert attempt.read_text() == "def add(a, b):\n    return a + b  # mine\n"


def test_a_read_only_data_folder_is_a_usage_error_not_a_bug(home: Path, read_only) -> None:
    assert run_mlprep(["list"], home)[0] == 0  # the store exists; now its folder cannot take the -wal file
    read_only(home)
    code, _, stderr, _ = run_mlprep(["list"], home)
    line = one_error_line(stderr)
    assert code == ExitStatus.USAGE and str(home / "progress.sqlite3") in line and "MLPREP_HOME" in line


def test_a_missing_workspace_says_how_to_start_again(home: Path) -> None:
    attempt = _attempt_with(home, "def add(a, b):\n    return a + b\n")
    shutil.rmtree(home / "workspace")
    code, _, stderr, _ = run_mlprep(["grade", "add"], home)
    assert code == ExitStatus.USAGE and f"no attempt of 'add' at {attempt}" in one_error_line(stderr)
    code, _, stderr, _ = run_mlprep(["grade"], home)
    assert code == ExitStatus.USAGE and "nothing to grade" in stderr and "Traceback" not in stderr
    code, out, _, _ = run_mlprep(["reset", "add"], home)
    assert code == 0 and attempt.exists()


def _real_store(home: Path) -> Path:
    assert run_mlprep(["grade", "add", "--file", str(CORRECT), "--record"], home)[0] == 0
    return home / "progress.sqlite3"


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _garbage(path: Path) -> None:
    path.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(8192)))


def _from_the_future(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.close()


@pytest.mark.parametrize(("damage", "says"), [(_garbage, "move it aside"), (_truncate, "move it aside"), (_from_the_future, "upgrade mlprep")])
def test_a_damaged_store_is_one_line_naming_the_file(home: Path, damage, says: str) -> None:
    store = _real_store(home)
    for sidecar in (store.with_name(store.name + "-wal"), store.with_name(store.name + "-shm")):
        sidecar.unlink(missing_ok=True)
    damage(store)
    for command in (["list"], ["grade", "add", "--file", str(CORRECT), "--record"]):
        code, _, stderr, _ = run_mlprep(command, home)
        line = one_error_line(stderr)
        assert code == ExitStatus.USAGE and str(store) in line and says in line


@pytest.fixture
def broken_bank(tmp_path: Path) -> Path:
    """The runner bank plus one copy of `add` per way its metadata can break."""
    bank = tmp_path / "bank"
    shutil.copytree(RUNNER_BANK, bank)

    def copy_of_add(name: str) -> Path:
        shutil.copytree(bank / "exercises" / "add", bank / "exercises" / name)
        shutil.copytree(bank / "solutions" / "add", bank / "solutions" / name)
        shutil.copy(bank / "graders" / "add.py", bank / "graders" / f"{name}.py")
        return bank / "exercises" / name / "exercise.toml"

    copy_of_add("bad-toml").write_text("format_version = 1\ntitle = [unclosed\n")
    meta = copy_of_add("no-topic")
    meta.write_text(meta.read_text().replace('topic = "testing"\n', ""))
    meta = copy_of_add("letters-for-hints")
    meta.write_text(meta.read_text().replace('hints = ["a", "b", "c"]', 'hints = "abc"'))
    copy_of_add("no-reference")
    (bank / "solutions" / "no-reference" / "reference.py").unlink()
    copy_of_add("no-grader")
    (bank / "graders" / "no-grader.py").unlink()
    meta = copy_of_add("toml-is-a-folder")
    meta.unlink()
    meta.mkdir()
    copy_of_add("grader-does-not-import")
    (bank / "graders" / "grader-does-not-import.py").write_text("import numpy as np\n\ndef broken(:\n")
    return bank


BROKEN_METADATA = {
    "bad-toml": "does not parse",
    "no-topic": "lacks 'topic'",
    "letters-for-hints": "hints must be a list",
    "no-reference": "missing solutions/no-reference/reference.py",
    "no-grader": "missing graders/no-grader.py",
    "toml-is-a-folder": "cannot be read",
}


def test_broken_exercises_are_reported_and_the_rest_of_the_bank_works(home: Path, broken_bank: Path) -> None:
    code, out, stderr, _ = run_mlprep(["list", "--json"], home, bank=broken_bank)
    assert code == 0 and "Traceback" not in stderr
    assert [row["id"] for row in json.loads(out)] == ["add", "grader-does-not-import", "softplus"]
    warnings = stderr.splitlines()
    assert len(warnings) == len(BROKEN_METADATA)
    for name, reason in BROKEN_METADATA.items():
        assert any(f"{name!r} is broken" in w and reason in w for w in warnings), (name, warnings)

    code, _, stderr, _ = run_mlprep(["grade", "add", "--file", str(CORRECT), "--record"], home, bank=broken_bank)
    assert code == 0, stderr
    code, _, stderr, _ = run_mlprep(["grade", "bad-toml", "--file", str(CORRECT)], home, bank=broken_bank)
    assert code == ExitStatus.USAGE and "'bad-toml' is broken" in one_error_line(stderr)
    # A grader that does not import is mlprep's defect, never the learner's: exit 3, one line.
    code, _, stderr, _ = run_mlprep(["grade", "grader-does-not-import", "--file", str(CORRECT), "--json"], home, bank=broken_bank)
    assert code == ExitStatus.INTERNAL and "could not be loaded" in one_error_line(stderr)


# -- usage errors ----------------------------------------------------------------------------------


@pytest.fixture
def cli(fixture_bank: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("COLUMNS", "200")
    return lambda *args: CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("command", ["show", "attempt", "grade", "hint", "solution", "reset", "selfcheck"])
def test_an_unknown_id_suggests_the_closest_with_exit_2(cli, command: str) -> None:
    result = cli(command, "reverse-word")
    assert result.exit_code == ExitStatus.USAGE and result.stdout == ""
    assert one_error_line(result.stderr) == "mlprep: error: no exercise 'reverse-word'; did you mean 'reverse-words'?"


@pytest.mark.parametrize("command", ["list", "show", "attempt", "grade", "hint", "solution", "reset", "progress", "selfcheck"])
def test_a_bad_flag_is_one_line_pointing_at_help(cli, command: str) -> None:
    result = cli(command, "add-one", "--colour")
    assert result.exit_code == ExitStatus.USAGE and result.stdout == ""
    line = one_error_line(result.stderr)
    assert "No such option: --colour" in line and f"see `mlprep {command} --help`" in line


@pytest.mark.parametrize(
    ("given", "suggestion"),
    [
        ("mine/solutin.py", "did you mean {folder}/solution.py?"),
        ("elsewhere/solution.py", "(there is no folder elsewhere)"),
        ("nothing-like-it.py", "(looked for {cwd}/nothing-like-it.py)"),
    ],
)
def test_a_missing_file_is_one_line_with_a_suggestion(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, suggestion: str) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "solution.py").write_text("def add_one(x):\n    return x + 1\n")
    monkeypatch.chdir(tmp_path)
    result = cli("grade", "add-one", "--file", given)
    assert result.exit_code == ExitStatus.USAGE and result.stdout == ""
    line = one_error_line(result.stderr)
    assert line.startswith(f"mlprep: error: no such file: {given}")
    assert line.endswith(suggestion.format(folder="mine", cwd=tmp_path))


@pytest.mark.parametrize(("args", "status"), [(["list"], 0), (["show", "add"], 0), (["grade", "add", "--file", "right.py", "--verbose"], 0),
                                              (["grade", "add", "--file", "wrong.py", "--verbose"], 1)])
def test_output_cut_by_its_reader_keeps_the_commands_exit_status(home: Path, tmp_path: Path, args: list[str], status: int) -> None:
    """`mlprep grade ... | head`: the reader goes away before mlprep writes; the command still ends with its own status, quietly."""
    import sys

    (tmp_path / "right.py").write_text((RUNNER_BANK / "solutions" / "add" / "reference.py").read_text())
    (tmp_path / "wrong.py").write_text("def add(a, b):\n    return a - b\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader from the start: the first write fails with EPIPE, whenever it comes
    env = {**os.environ, "MLPREP_HOME": str(home), "MLPREP_BANK": str(RUNNER_BANK)}
    process = subprocess.run([sys.executable, "-m", "mlprep", *args], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env, timeout=120)
    os.close(write_end)
    assert process.returncode == status, process.stderr
    assert process.stderr == ""


def test_names_are_inert_and_a_batch_of_one_file_still_reports(home: Path, tmp_path: Path) -> None:
    """A file named with terminal escapes (clear the screen, set the title, colours) is shown, never obeyed,
    in the single-file header, in a batch's table and in errors; a --dir of one file prints its line and summary."""
    import sys

    folder = tmp_path / "cohort"
    folder.mkdir()
    name = "\x1b[2J\x1b]0;owned\x07\x1b[32mPASS.py"
    (folder / name).write_text("def add(a, b):\n    return a - b\n")
    env = {**os.environ, "MLPREP_HOME": str(home), "MLPREP_BANK": str(RUNNER_BANK), "COLUMNS": "200"}
    single = subprocess.run([sys.executable, "-m", "mlprep", "grade", "add", "--file", str(folder / name)], capture_output=True, text=True, env=env, timeout=120)
    batch = subprocess.run([sys.executable, "-m", "mlprep", "grade", "add", "--dir", str(folder)], capture_output=True, text=True, env=env, timeout=120)
    missing = subprocess.run([sys.executable, "-m", "mlprep", "grade", "add", "--file", str(folder / ("x" + name))], capture_output=True, text=True, env=env,
                             timeout=120)
    for run in (single, batch, missing):
        assert "\x1b" not in run.stdout + run.stderr and "\x07" not in run.stdout + run.stderr
    assert "\\x1b[2J" in single.stdout and "\\x1b[2J" in batch.stdout and "\\x1b[2J" in missing.stderr
    assert batch.returncode == 1 and "0 of 1 file passed" in batch.stdout and "PASS.py" in batch.stdout


def test_a_packs_names_and_titles_are_shown_never_obeyed(home: Path, tmp_path: Path) -> None:
    import sys

    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "bank", bank)
    toml = bank / "exercises" / "add-one" / "exercise.toml"
    toml.write_text(toml.read_text().replace('title = "', 'title = "\\u001b[2J\\u001b[31m', 1))
    shutil.copytree(bank / "exercises" / "add-one", bank / "exercises" / "evil\x1b[2Jid")
    env = {**os.environ, "MLPREP_HOME": str(home), "MLPREP_BANK": str(bank), "COLUMNS": "200"}
    listed = subprocess.run([sys.executable, "-m", "mlprep", "list"], capture_output=True, text=True, env=env, timeout=60)
    shown = subprocess.run([sys.executable, "-m", "mlprep", "show", "add-one"], capture_output=True, text=True, env=env, timeout=60)
    for run in (listed, shown):
        assert run.returncode == 0 and "\x1b[2J" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert "\\x1b[2J" in listed.stdout and "is not an exercise id" in listed.stderr
