"""The hostile corpus: submissions written to crash, hang or fool the grader, each graded through the
real CLI in a subprocess (`python -m mlprep grade ID --file CASE --json`), as a learner would.

Every case must end in the verdict its row names (a failed one), with exit code 1 (not 3: the learner's code is never mlprep's defect),
no traceback, the failing check naming what happened, within the grade's time limit plus 5 s (and a
few seconds for mlprep's own start), and the progress store intact with the grade recorded.

The table of cases and the verdict each produced today: `python tests/test_hostile.py`.
A row with `runner_hole` fails today because of the sandbox runner; it is a strict xfail with the
reason, to be removed when the runner closes the hole.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from xml.etree import ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlprep_process import FIXTURES, RUNNER_BANK, integrity, kill_processes_of, processes_naming, processes_of, run_mlprep, wait_until

from mlprep.bank import load_bank
from mlprep.grading._isolation import available as isolation_available
from mlprep.grading.engine import MAX_LOAD
from mlprep.progress.store import Store

HOSTILE = FIXTURES / "hostile"
ISOLATED = isolation_available()  # sandboxes in namespaces of their own: read-only but for scratch, no pids outside
SLACK_S = {"add": 6.0, "softplus": 20.0}  # starting Python (and importing torch for softplus) on a busy CI machine


@dataclass
class Graded:
    """One `mlprep grade` run: exit code (None: killed for running past its bound), output, wall time."""

    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    home: Path
    submission: Path

    @property
    def result(self) -> dict:
        return json.loads(self.stdout)

    def problems(self) -> list[str]:
        """The messages of the checks that did not pass or skip."""
        return [c["message"] for c in self.result["checks"] if c["status"] not in ("pass", "skip")]


def grade_case(name: str, exercise: str, folder: Path, *, timeout_s: float | None = None, json_output: bool = True) -> Graded:
    """Copy the case into `folder/submission` (beside a notes file it may tamper with) and grade it."""
    home = folder / "mlprep-home"
    submission = folder / "submission" / f"{name}.py"
    submission.parent.mkdir(parents=True)
    shutil.copy(HOSTILE / f"{name}.py", submission)
    (submission.parent / "notes.txt").write_text("the learner's notes\n")
    limit = timeout_s if timeout_s is not None else load_bank(RUNNER_BANK).get(exercise).timeout_s
    args = ["grade", exercise, "--file", str(submission), "--record"] + (["--json"] if json_output else []) + (["--timeout", str(timeout_s)] if timeout_s else [])
    returncode, stdout, stderr, elapsed = run_mlprep(args, home, bound_s=time_bound(exercise, limit))
    return Graded(returncode, stdout, stderr, elapsed, home, submission)


def time_bound(exercise: str, limit_s: float) -> float:
    """The whole grade ends within its time limit plus 5 s, whatever the code does; plus mlprep's own start."""
    return limit_s + 5.0 + SLACK_S[exercise]


# -- what some cases check afterwards --------------------------------------------------------------


def child_is_gone(graded: Graded) -> None:
    """The shell the submission started (its command line names the submission) is gone."""
    try:
        wait_until(lambda: not processes_naming(graded.submission), "the submission's child processes are killed", timeout_s=3)
    finally:
        kill_processes_of(graded.home)  # the test's own leftovers: never leave them running


def solution_stays_locked(graded: Graded) -> None:
    returncode, stdout, stderr, _ = run_mlprep(["solution", "add"], graded.home)
    assert returncode == 2 and "unlocks once you pass" in stderr
    assert "return a + b" not in stdout


def store_says_not_passed(graded: Graded) -> None:
    returncode, stdout, _, _ = run_mlprep(["list", "--json"], graded.home)
    assert returncode == 0
    status = {row["id"]: row["status"] for row in json.loads(stdout)}["add"]
    assert status != "passed", "`mlprep list` says add is passed: the forged grade counts"


def files_left_alone(graded: Graded) -> None:
    """The fake text is the learner's output, and nothing mlprep reads; isolated, the submission's
    own folder could not be written at all."""
    assert "[bold green]" in graded.result["output"] and graded.result["status"] == "fail"
    assert not ISOLATED or not (graded.submission.parent / "results.json").exists()


def files_still_there(graded: Graded) -> None:
    assert graded.submission.exists() and not list(graded.submission.parent.glob("*.renamed"))


# -- the corpus ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str  # tests/fixtures/hostile/<name>.py
    status: str  # the overall verdict it must get
    says: str  # words a failing check's message must contain
    exercise: str = "add"
    timeout_s: float | None = None  # --timeout, to keep the hanging cases short
    then: Callable[[Graded], None] | None = None
    runner_hole: str | None = None  # why it fails today (a strict xfail): a hole for the runner to close


CASES = [
    Case("syntax_error", "error", "does not parse"),
    Case("missing_module", "error", "ModuleNotFoundError: No module named 'mlprep_no_such_module'"),
    Case("raises_at_import", "error", "importing your file failed"),
    Case("infinite_loop", "timeout", "the time limit for the whole grade (", timeout_s=1),  # 1 s, scaled by the load
    Case("infinite_loop_at_import", "timeout", "time limit", timeout_s=1),
    Case("memory_bomb", "error", "memory"),
    Case("segfault", "error", "segmentation fault"),
    Case("sys_exit_import", "error", "sys.exit(0)"),
    Case("sys_exit_in_function", "error", "sys.exit(0)"),
    Case("os_exit", "error", "exited with code 0"),
    Case("flood", "fail", "MiB of output"),
    Case("returns_none", "fail", "got None"),
    Case("wrong_shape", "fail", "expected shape (3, 4), got shape (12,)"),
    Case("wrong_dtype", "fail", "dtype float64"),
    Case("returns_nan", "fail", "got nan"),
    Case("lying_object", "fail", "got a Agreeable object"),
    Case("mutates", "fail", "modified its input a in place"),
    Case("monkeypatch_numpy", "fail", "values differ"),
    Case("monkeypatch_torch", "fail", "values differ", exercise="softplus"),
    Case("fake_pass_output", "fail", "values differ", then=files_left_alone),
    Case("child_process", "error", "process(es) running", then=child_is_gone),
    Case("detached_child", "error", "process(es) running", then=child_is_gone),
    # Isolated, the sandbox can write only its scratch folder; otherwise the deletions happen.
    Case("deletes_own_files", "error", "Read-only file system", then=files_still_there) if ISOLATED else Case("deletes_own_files", "error", "exited with code 0"),
    # Isolated, the bank's references and graders, and mlprep's data folder, are out of the sandbox's sight.
    Case("reads_reference", "error", "No such file or directory", then=solution_stays_locked) if ISOLATED else Case("reads_reference", "fail", "values differ"),
    Case("execs_reference", "error", "No such file or directory", then=solution_stays_locked, runner_hole=None if ISOLATED else
         "without namespaces the sandbox can read the bank's files"),
    Case("loads_the_bank", "error", "missing solutions/add/reference.py", then=solution_stays_locked, runner_hole=None if ISOLATED else
         "without namespaces the sandbox can read the bank's files"),
    Case("calls_the_grader", "error", "no grader in this process"),
    Case("garbage_on_result_pipe", "error", "your process sent"),
    Case("reads_stdin", "error", "EOFError"),
    Case("recursion_bomb", "error", "RecursionError"),
    Case("kills_the_judge", "fail", "values differ") if ISOLATED else Case("kills_the_judge", "error", "SIGKILL"),
    Case("forges_the_store", "error", "unable to open database file", then=store_says_not_passed, runner_hole=None if ISOLATED else
         "without user namespaces the sandbox runs as the same user and can write the progress store"),
]


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=f"runner: {case.runner_hole}")] if case.runner_hole else []
    return pytest.param(case, id=case.name, marks=marks)


def test_every_case_file_is_in_the_table() -> None:
    assert sorted(p.stem for p in HOSTILE.glob("*.py")) == sorted(c.name for c in CASES)


@pytest.fixture
def leftovers_killed(tmp_path: Path):
    """Whatever a case leaves running (a hole in the runner) is killed after the test, by pid."""
    yield
    kill_processes_of(tmp_path / "mlprep-home")


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile_submission_gets_a_clear_verdict(case: Case, tmp_path: Path, leftovers_killed: None) -> None:
    graded = grade_case(case.name, case.exercise, tmp_path, timeout_s=case.timeout_s)
    limit = case.timeout_s or load_bank(RUNNER_BANK).get(case.exercise).timeout_s
    assert graded.returncode is not None, f"still running after {time_bound(case.exercise, limit):g} s; killed"
    assert graded.returncode == (0 if case.status == "pass" else 1), graded.stderr
    assert "Traceback" not in graded.stdout + graded.stderr
    result = graded.result
    assert result["status"] == case.status and not result["internal_error"]
    if case.status != "pass":
        assert any(case.says in message for message in graded.problems()), graded.problems()
    assert graded.elapsed_s < time_bound(case.exercise, limit)

    store_file = graded.home / "progress.sqlite3"
    assert integrity(store_file) == [("ok",)]
    with Store(store_file) as store:
        latest = store.grades(case.exercise)[0]
    assert (latest.status, latest.source, latest.path) == (case.status, "file", str(graded.submission.resolve()))
    if case.then is not None:
        case.then(graded)


def test_the_human_output_of_a_fake_pass_is_inert(tmp_path: Path, leftovers_killed: None) -> None:
    """The table, not JSON: the learner's printed fake verdict and terminal escapes are shown as
    text in the output panel; the real verdict stays on screen."""
    graded = grade_case("fake_pass_output", "add", tmp_path, json_output=False)
    assert graded.returncode == 1 and "Traceback" not in graded.stdout + graded.stderr
    assert graded.stdout.startswith("add: FAIL")
    assert "\x1b" not in graded.stdout  # no raw escape: "clear the screen" would wipe the verdict
    assert "[bold green]PASS[/bold green] add: all 4 checks passed" in graded.stdout


# -- hangs and slow code against real exercises, at their default limits --------------------------

REPO = Path(__file__).resolve().parents[1]
SLOW = FIXTURES / "slow"
STARTUP_SLACK_S = 20.0  # mlprep's own start (importing torch) and the first measurement of the reference, on a busy machine


@dataclass(frozen=True)
class SlowCase:
    name: str  # tests/fixtures/slow/<name>.py
    exercise: str


SLOW_CASES = [SlowCase("adamw_infinite_loop", "adamw"), SlowCase("adamw_sleeps_2s", "adamw"), SlowCase("adamw_ignores_sigterm", "adamw"),
              SlowCase("knn_python_loops", "knn")]


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data folder for these cases, so the reference of each exercise is measured once."""
    return tmp_path_factory.mktemp("slow") / "mlprep-home"


@pytest.mark.parametrize("case", SLOW_CASES, ids=[c.name for c in SLOW_CASES])
def test_a_hang_or_slow_code_gets_its_verdict_within_the_exercises_limit(case: SlowCase, shared_home: Path, tmp_path: Path) -> None:
    """The whole grade ends within the exercise's time limit plus 5 s (plus mlprep's own start),
    whatever the code does: the check that hit its limit says so, and the checks that would call the
    same code again say why they did not run."""
    limit = load_bank(REPO).get(case.exercise).timeout_s
    submission = tmp_path / f"{case.name}.py"
    shutil.copy(SLOW / f"{case.name}.py", submission)
    # The grade's limit is the exercise's scaled by the machine's load (at most MAX_LOAD times): it says which it ran under.
    returncode, stdout, stderr, elapsed = run_mlprep(["grade", case.exercise, "--file", str(submission), "--json"], shared_home, bank=REPO,
                                                     bound_s=limit * MAX_LOAD + 5 + STARTUP_SLACK_S + 30)
    try:
        assert returncode == 1, stderr
        result = json.loads(stdout)
        assert limit <= result["time_limit_s"] <= limit * MAX_LOAD
        assert elapsed < result["time_limit_s"] + 5 + STARTUP_SLACK_S, f"took {elapsed:.1f} s against a limit of {result['time_limit_s']:g} s"
        assert result["status"] == "timeout" and not result["internal_error"]
        checks = [c for c in result["checks"] if "[cuda]" not in c["name"]]
        first = next(i for i, c in enumerate(checks) if c["status"] == "timeout")
        timed_out, later = checks[first], checks[first + 1:]
        assert "time limit of" in timed_out["message"] and "this check's limit" in timed_out["message"]
        assert later and all(c["status"] == "skip" and f"hit its time limit in the check {timed_out['name']!r}" in c["message"] for c in later)
        # The sandboxes, the fork server and whatever the code started (the SIGTERM-ignoring child too) are gone.
        wait_until(lambda: not processes_of(shared_home), "every process of the grade has ended", timeout_s=5)
    finally:
        kill_processes_of(shared_home)


# -- a false pass through a patched library, against the real bank -------------------------------------


def test_copies_behind_a_patched_numpy_are_not_taken_for_views(tmp_path: Path) -> None:
    """windows-checkpoint's windows must be views of the series. This file returns copies and replaces np.array,
    np.copy and np.asarray in its own process so that copying one of its copies rebuilds it from the series as
    it is now, as a view would read (issue 23's false pass): the probe reads the arrays through ndarray's own
    methods, bound before the file is imported, and the judge checks where their elements lie in memory."""
    submission = tmp_path / "copies_behind_patched_numpy.py"
    shutil.copy(HOSTILE / "real_bank" / "windows_checkpoint__copies_behind_patched_numpy.py", submission)
    limit = load_bank(REPO).get("windows-checkpoint").timeout_s
    returncode, stdout, stderr, _ = run_mlprep(["grade", "windows-checkpoint", "--file", str(submission), "--json"], tmp_path / "home", bank=REPO,
                                               bound_s=limit * MAX_LOAD + 5 + STARTUP_SLACK_S + 30)
    assert returncode == 1, stderr
    checks = {c["name"]: c for c in json.loads(stdout)["checks"]}
    views = [c for name, c in checks.items() if "returns views" in name]
    assert len(views) == 2 and all(c["status"] == "fail" and "copy" in c["message"] for c in views), views
    values = [c for name, c in checks.items() if name.startswith("make_windows: window i starts")]
    assert values and values[0]["status"] == "pass"  # the copies hold the right values: only being views is wrong


# -- values JSON must carry ------------------------------------------------------------------------

NAN_FOCAL_LOSS = """import torch


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    p = torch.sigmoid(z)
    ce = -(y * torch.log(p + 1e-8) + (1 - y) * torch.log(1 - p + 1e-8))  # log(0) once 1e-8 rounds away
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    return (alpha_t * (1 - p_t) ** gamma * ce).mean() * torch.tensor(float("nan")) ** (z.numel() == 1)
"""

INF_ADAMW = """def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    return w * float("inf"), m + g, v + g * g
"""


def refuse_constant(name: str) -> None:
    raise AssertionError(f"not valid JSON (RFC 8259): bare {name}")


@pytest.mark.parametrize("exercise, source", [("focal-loss", NAN_FOCAL_LOSS), ("adamw", INF_ADAMW)], ids=["nan-focal-loss", "inf-adamw"])
def test_json_is_valid_whatever_the_values(exercise: str, source: str, shared_home: Path, tmp_path: Path) -> None:
    submission = tmp_path / "values.py"
    submission.write_text(source)
    returncode, stdout, stderr, _ = run_mlprep(["grade", exercise, "--file", str(submission), "--json", "--junit", str(tmp_path / "junit.xml")],
                                               shared_home, bank=REPO, bound_s=120)
    assert returncode == 1, stderr
    result = json.loads(stdout, parse_constant=refuse_constant)
    assert result["status"] == "fail" and not result["internal_error"]
    said = json.dumps(result["checks"])
    assert "NaN" in said or "inf" in said  # the non-finite values are there, as strings
    ET.parse(tmp_path / "junit.xml")


# -- the table for the closing note: python tests/test_hostile.py ----------------------------------


def verdict_row(case: Case, folder: Path) -> str:
    """One line of the table: the case, the verdict expected and the one it got, and what was said."""
    graded = grade_case(case.name, case.exercise, folder, timeout_s=case.timeout_s)
    if graded.returncode is None:
        status, said = "-", "(killed: still running past its time bound)"
    elif graded.stdout.strip():
        status, said = graded.result["status"], "; ".join(graded.problems()[:1]).split("\n")[0][:90]
    else:
        status, said = "-", (graded.stderr.strip() or "(no output at all)")[:100]
    if case.then is not None and graded.returncode is not None:
        try:
            case.then(graded)
            said += f"  [{case.then.__name__}: holds]"
        except AssertionError as failed:
            said += f"  [{case.then.__name__}: DOES NOT HOLD: {(str(failed).splitlines() or ['assertion failed'])[0]}]"
    kill_processes_of(graded.home)
    hole = " (runner hole)" if case.runner_hole else ""
    return f"| {case.name}{hole} | {case.status} | {status} | {graded.returncode} | {graded.elapsed_s:.1f} | {said} |"


def main() -> None:
    print("| case | expected | got | exit | s | what the first failing check says |")
    print("|---|---|---|---|---|---|")
    for case in CASES:
        with tempfile.TemporaryDirectory() as folder:
            print(verdict_row(case, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
