"""Repro scripts (`mlprep grade ID --repro`): for each Phase A exercise graded on one of its known bugs,
one standalone script per failed check is written next to the attempt; run as a learner would
(`python script.py`), each reproduces its failure (exit 1, "DIFFERENT"), and once the attempt is
fixed (the reference in its place) each agrees with the reference (exit 0, "SAME")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bank_bugs import PHASE_A_BUGS as BUGS

from mlprep.bank import load_bank
from mlprep.grading.engine import grade_file
from mlprep.grading.repro import MARKER, write_repro_scripts

REPO = Path(__file__).resolve().parents[1]
FIXTURE_BANK = REPO / "tests" / "fixtures" / "bank"

# One known bug per exercise, whose failures show in the values.

# Runs every script given, each as __main__ in a fresh namespace, and prints its exit status: one
# interpreter per exercise instead of one per script (the first script also runs on its own below).
RUN_ALL = """
import runpy, sys
for script in sys.argv[1:]:
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exit:
        code = exit.code
    print(f"EXIT {code} {script}", flush=True)
"""


def run_scripts(scripts: list[Path]) -> dict[str, tuple[int, str]]:
    process = subprocess.run([sys.executable, "-c", RUN_ALL, *map(str, scripts)], capture_output=True, text=True, timeout=300, cwd=scripts[0].parent)
    assert "Traceback" not in process.stderr, process.stderr[-3000:]
    outcome, lines = {}, []
    for line in process.stdout.splitlines():
        if line.startswith("EXIT "):
            _, code, script = line.split(" ", 2)
            outcome[Path(script).name] = (int(code), "\n".join(lines))
            lines = []
        else:
            lines.append(line)
    return outcome


@pytest.mark.parametrize("exercise_id", sorted(BUGS))
def test_each_failed_check_gets_a_script_that_reproduces_it_and_passes_once_fixed(exercise_id: str, tmp_path: Path) -> None:
    exercise = load_bank(REPO).get(exercise_id)
    bug = next(b for b in exercise.bugs() if b.name == BUGS[exercise_id])
    attempt = tmp_path / exercise_id / (exercise_id.replace("-", "_") + ".py")
    attempt.parent.mkdir()
    attempt.write_text(bug.apply(exercise.reference_path.read_text()))
    result = grade_file(exercise, attempt, device="cpu")
    failed = [c.name for c in result.failed_checks()]
    scripts = write_repro_scripts(exercise, result, attempt)
    assert scripts.folder.parent == attempt.parent / f"{attempt.stem}_repro"  # a folder of its own per run
    assert [name for name, _ in scripts.written] == failed, scripts.left_out
    paths = [path for _, path in scripts.written]

    alone = subprocess.run([sys.executable, str(paths[0])], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert alone.returncode == 1 and "DIFFERENT" in alone.stdout, alone.stdout + alone.stderr
    for name, (code, output) in run_scripts(paths).items():
        assert code == 1 and "DIFFERENT" in output, f"{name} did not reproduce its failure:\n{output}"

    attempt.write_text(exercise.reference_path.read_text())
    for name, (code, output) in run_scripts(paths).items():
        assert code == 0 and "SAME" in output, f"{name} still differs with the reference in place:\n{output}"


def test_the_cli_writes_scripts_and_diagnoses_and_a_rerun_writes_new_ones_beside_the_old(tmp_path: Path, mlprep_home: Path) -> None:
    env = {**os.environ, "MLPREP_BANK": str(FIXTURE_BANK), "COLUMNS": "200"}
    attempt = tmp_path / "add_one.py"
    attempt.write_text("def add_one(x):\n    return x + 2\n")
    folder = tmp_path / "add_one_repro"
    folder.mkdir()
    (folder / "notes.py").write_text("# the learner's own file: kept\n")
    (folder / "99_stale.py").write_text(f"{MARKER}: from an earlier run\n")  # mlprep's look, but not this run's: kept too

    def grade() -> dict:
        process = subprocess.run([sys.executable, "-m", "mlprep", "grade", "add-one", "--file", str(attempt), "--diagnose", "--repro", "--json"],
                                 capture_output=True, text=True, env=env, timeout=120)
        assert process.returncode == 1, process.stderr
        return json.loads(process.stdout)

    data = grade()
    assert data["diagnosis"]["matched"] == [{"name": "adds_two", "summary": "adds two instead of one"}]
    assert data["diagnosis"]["text"] == "This matches a known mistake: adds two instead of one (adds_two)."
    written = [Path(s["path"]) for s in data["repro"]["scripts"]]
    assert [s["check"] for s in data["repro"]["scripts"]] == [c["name"] for c in data["checks"] if c["status"] == "fail"]
    first_run = Path(data["repro"]["folder"])
    assert first_run.parent == folder and sorted(p.name for p in first_run.iterdir()) == sorted(p.name for p in written)
    run = subprocess.run([sys.executable, str(written[0])], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "DIFFERENT: got: 1 of 1 values differ; first: expected 1, got 2" in run.stdout, run.stdout + run.stderr

    attempt.write_text("def add_one(x):\n    return x + 1.5\n")  # fails other checks now: a folder of its own, nothing removed
    data = grade()
    second_run = Path(data["repro"]["folder"])
    assert second_run != first_run and sorted(p.name for p in second_run.iterdir()) == sorted(Path(s["path"]).name for s in data["repro"]["scripts"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(["notes.py", "99_stale.py", first_run.name, second_run.name])
    assert all(p.exists() for p in written)
    assert data["diagnosis"]["matched"] == []

    progress = subprocess.run([sys.executable, "-m", "mlprep", "progress"], capture_output=True, text=True, env=env, timeout=60)
    assert "hints used: 1 (add-one 1 diagnosis)" in progress.stdout, progress.stdout


def test_repro_scripts_never_go_through_a_link_out_of_the_attempts_folder(tmp_path: Path, mlprep_home: Path) -> None:
    env = {**os.environ, "MLPREP_BANK": str(FIXTURE_BANK), "COLUMNS": "200"}
    attempt = tmp_path / "mine" / "add_one.py"
    attempt.parent.mkdir()
    attempt.write_text("def add_one(x):\n    return x + 2\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "01_old.py").write_text(f"{MARKER}: someone else's file\n")
    (attempt.parent / "add_one_repro").symlink_to(elsewhere)
    process = subprocess.run([sys.executable, "-m", "mlprep", "grade", "add-one", "--file", str(attempt), "--repro"], capture_output=True, text=True,
                             env=env, timeout=120)
    assert process.returncode == 2 and "is a symbolic link" in process.stderr, process.stderr
    assert [p.name for p in elsewhere.iterdir()] == ["01_old.py"]  # nothing written there, nothing removed
