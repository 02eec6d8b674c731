"""`pytest --mlprep`: a learner's solutions graded as tests, one test per check (CI for a solutions repository).

Off unless asked: without `--mlprep` this plugin only adds its options, and loading it imports
neither numpy, torch nor mlprep's judge (pytest loads it in every run, mlprep's own test suite too).

What is graded, relative to pytest's rootdir:
- the files a config maps, exercise id to path (relative to the config's folder):
  `mlprep.toml` with `[exercises]`, or `pyproject.toml` with `[tool.mlprep.exercises]`, or the file
  `--mlprep-config PATH` names (`[tool.mlprep.exercises]` in a pyproject.toml, else `[exercises]`);
- without a config, the attempts in the workspace layout: `<id>/<id with - as _>.py` for each
  exercise of the bank (its kind's attempt path).

Collection: each mapped file is a pytest File (collected when pytest visits it), holding one node
per exercise mapped to it, holding one item per check the grader plans for `--mlprep-device`
(engine.plan_runs), after the import check: `add-one/add_one.py::add-one::small integers`. The
names come from the grader without grading; the file is graded once, by the engine, when the first
of its items runs (the exercise node's setup), and every item reads its check's verdict from that
grade. A config that does not parse, an unknown id, a mapped file that does not exist, and a mapped
file pytest did not visit although the run covers it (testpaths, norecursedirs, --ignore: a green
run that graded nothing would be a lie) are collection errors, reported under the config's path.

Outcomes: pass -> passed; fail, error, timeout -> failed, the report being mlprep's message and the
smallest failing input (as `mlprep grade` shows them, plain text); skip (a CUDA scenario without a
GPU, a check not run) -> skipped with mlprep's reason; a defect of mlprep or of a grader -> an error
of the item that says so, never a pass or a failure. Nothing is recorded in the progress store.
"""

from __future__ import annotations

import os
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mlprep.bank import Bank, Exercise
    from mlprep.practice.grading import Target
    from mlprep.results import CheckResult, GradeResult

DEVICE_CHOICES = ("auto", "cpu", "cuda")
CONFIG_FILE = "mlprep.toml"
PYPROJECT = "pyproject.toml"
PLUGIN_NAME = "mlprep-grading"
DEFECT = "internal error in mlprep (a defect in mlprep or its grader, not your code)"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlprep", "mlprep: grade your exercise solutions")
    group.addoption("--mlprep", action="store_true", default=False,
                    help="Grade the files mlprep.toml (or pyproject.toml's [tool.mlprep.exercises]) maps, or the attempts in the workspace "
                         "layout <id>/<id_>.py under the rootdir: one test per check.")
    group.addoption("--mlprep-device", choices=DEVICE_CHOICES, default="auto",
                    help="Devices to grade on (default auto: CPU, and CUDA when a GPU is visible; CUDA scenarios are skipped without one).")
    group.addoption("--mlprep-config", metavar="PATH", default=None,
                    help="The config mapping exercise ids to files (default: mlprep.toml or pyproject.toml at the rootdir).")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("mlprep"):
        return
    from mlprep.errors import MlprepError

    device = config.getoption("mlprep_device")
    explicit = config.getoption("mlprep_config")
    try:
        if device == "cuda":
            from mlprep.grading.engine import require_device

            require_device(device)
        from mlprep.bank import load_bank

        bank = load_bank()
    except MlprepError as exc:
        raise pytest.UsageError(f"mlprep: {exc.message.replace('--device', '--mlprep-device')}") from None  # the engine words it for the CLI
    config_path = None
    if explicit is not None:
        config_path = Path(config.invocation_params.dir, explicit).resolve()
        if not config_path.is_file():
            raise pytest.UsageError(f"mlprep: --mlprep-config {explicit}: no such file ({config_path})")
    plan = plan_targets(config.rootpath, bank, config_path)
    config.pluginmanager.register(MlprepGrading(config, plan, device), PLUGIN_NAME)


# ---------------------------------------------------------------------------------------------
# What to grade: the config's mapping, or the workspace layout
# ---------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What `pytest --mlprep` grades: the files mapped to exercises, and the problems in the mapping."""
    source: str  # where the mapping comes from, in words (the report header says it)
    origin: Path  # the config file, else the rootdir: collection errors are reported under its path
    targets: list[Target] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each a collection error, naming the id or path


def plan_targets(rootdir: Path, bank: Bank, config_path: Path | None = None) -> Plan:
    """The files to grade under `rootdir`: those `config_path` (else mlprep.toml or pyproject.toml's
    [tool.mlprep.exercises] at the rootdir) maps, else the attempts in the workspace layout. Problems
    with the config (it does not parse, an id the bank lacks, a file that is not there) are collected
    in the plan, not raised: pytest reports them as collection errors."""
    rootdir = Path(rootdir).resolve()
    if config_path is not None:
        keys = ("tool", "mlprep", "exercises") if config_path.name == PYPROJECT else ("exercises",)
        return _plan_from_config(config_path, keys, bank)
    own, pyproject = rootdir / CONFIG_FILE, rootdir / PYPROJECT
    pyproject_data: dict[str, Any] | None = None
    if pyproject.is_file():
        try:
            pyproject_data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
            return Plan(PYPROJECT, pyproject, problems=[f"{PYPROJECT} does not parse, so mlprep cannot tell whether it maps exercises: {exc}"])
    in_pyproject = isinstance(pyproject_data, dict) and isinstance(pyproject_data.get("tool"), dict) and "mlprep" in pyproject_data["tool"]
    if own.is_file() and in_pyproject:
        return Plan(CONFIG_FILE, own, problems=[f"both {CONFIG_FILE} and {PYPROJECT} ([tool.mlprep]) configure mlprep: keep one of them"])
    if own.is_file():
        return _plan_from_config(own, ("exercises",), bank)
    if in_pyproject:
        return _plan_from_config(pyproject, ("tool", "mlprep", "exercises"), bank, data=pyproject_data)
    return _plan_from_workspace(rootdir, bank)


def _plan_from_workspace(rootdir: Path, bank: Bank) -> Plan:
    from mlprep.kinds import kind_of
    from mlprep.practice.grading import Target

    plan = Plan("the workspace layout <id>/<id_>.py", rootdir)
    for exercise in bank.exercises:
        kind = kind_of(exercise)
        path = kind.attempt_path(rootdir, exercise)
        if kind.runs_code and path.is_file():  # quizzes and stories are graded by `mlprep grade`
            plan.targets.append(Target(exercise, path.resolve(), "file"))
    return plan


def _plan_from_config(path: Path, keys: tuple[str, ...], bank: Bank, data: dict[str, Any] | None = None) -> Plan:
    from mlprep.errors import MlprepError
    from mlprep.kinds import kind_of
    from mlprep.practice.grading import Target

    table_name = "[" + ".".join(keys) + "]"
    plan = Plan(f"{path.name} {table_name}", path)
    where = f"{path.name} {table_name}"
    if data is None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
            plan.problems.append(f"{path.name} does not parse: {exc}")
            return plan
    table: Any = data
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        plan.problems.append(f"{path.name} has no {table_name} table mapping exercise ids to files, e.g. {table_name} then add-one = \"add_one.py\"")
        return plan
    for exercise_id, value in table.items():
        if not isinstance(value, str) or not value:
            plan.problems.append(f"{where}: {exercise_id} = {value!r}: the value must be the path of the file that implements {exercise_id} (a string)")
            continue
        try:
            exercise = bank.get(exercise_id)
        except MlprepError as exc:
            plan.problems.append(f"{where}: {exercise_id} = {value!r}: {exc.message}")
            continue
        if not kind_of(exercise).runs_code:
            plan.problems.append(f"{where}: {exercise_id} is a {exercise.kind}: `pytest --mlprep` grades code; `mlprep grade {exercise_id}` grades it")
            continue
        file = (path.parent / value).resolve()
        if not file.exists():
            plan.problems.append(f"{where}: {exercise_id} = {value!r}: no such file ({file})")
        elif not file.is_file():
            plan.problems.append(f"{where}: {exercise_id} = {value!r}: not a file ({file})")
        else:
            plan.targets.append(Target(exercise, file, "file"))
    return plan


# ---------------------------------------------------------------------------------------------
# The plugin proper, registered only with --mlprep
# ---------------------------------------------------------------------------------------------


class MlprepGrading:
    """Collects the plan's files as tests and reports what went wrong with the plan itself."""

    def __init__(self, config: pytest.Config, plan: Plan, device: str):
        self.config = config
        self.plan = plan
        self.device = device
        self.by_path: dict[Path, list[Target]] = {}
        for target in plan.targets:
            self.by_path.setdefault(target.path, []).append(target)
        self.names = {path.name for path in self.by_path}
        self.visited: set[Path] = set()
        self.made_as_module: Path | None = None  # the file pytest_pycollect_makemodule just collected (see there)

    def pytest_report_header(self) -> str:
        count = len(self.plan.targets)
        return f"mlprep: {count} file{'' if count == 1 else 's'} to grade, from {self.plan.source} (device {self.device})"

    def _targets(self, file_path: Path) -> tuple[Path, list[Target]] | None:
        if file_path.name not in self.names:  # cheap: most files pytest visits are none of ours
            return None
        resolved = file_path.resolve()
        targets = self.by_path.get(resolved)
        return (resolved, targets) if targets else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """A mapped file pytest's Python plugin would import as a test module (one named on the command
        line, or one whose name matches python_files) is collected as an attempt instead: the learner's
        code runs only in mlprep's sandbox, never in pytest's process."""
        found = self._targets(module_path)
        if found is None:
            return None
        self.visited.add(found[0])
        self.made_as_module = found[0]
        return AttemptFile.from_parent(parent, path=module_path, targets=found[1], device=self.device)

    @pytest.hookimpl(trylast=True)  # after the Python plugin's, which may have made it already (above)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        found = self._targets(file_path)
        if found is None:
            return None
        if self.made_as_module == found[0]:
            self.made_as_module = None
            return None
        self.visited.add(found[0])
        return AttemptFile.from_parent(parent, path=file_path, targets=found[1], device=self.device)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session) -> None:
        """The plan's own problems, and the mapped files a run meant to grade but pytest did not visit, as
        collection errors: every file when the paths come from testpaths (a bare `pytest --mlprep`), else
        those under the paths it collects (a narrower path given on purpose leaves the others out)."""
        problems = list(self.plan.problems)
        from_testpaths = getattr(getattr(self.config, "args_source", None), "name", "") == "TESTPATHS"  # pytest >= 7.2 says where its paths came from
        for target in self.plan.targets:
            if target.path in self.visited or not (from_testpaths or self._covers(target.path)):
                continue
            where = _relative(target.path, self.config.rootpath)
            if from_testpaths:
                problems.append(f"{target.exercise.id}: {where} is outside testpaths ({' '.join(self.config.getini('testpaths'))}), so nothing graded it: "
                                f"run `pytest --mlprep .`, or add its folder to testpaths")
            else:
                problems.append(f"{target.exercise.id}: pytest did not collect {where} (norecursedirs, --ignore or a conftest's collect_ignore leaves it out), "
                                f"so nothing graded it: run `pytest --mlprep {where}`, or move it")
        if problems:
            nodeid = _relative(self.plan.origin, self.config.rootpath) if self.plan.origin.is_file() else "mlprep"
            report = pytest.CollectReport(nodeid, "failed", "\n".join(problems), [])
            session.ihook.pytest_collectreport(report=report)

    def _covers(self, path: Path) -> bool:
        """Whether `path` lies under a path this run collects (given, or the directory pytest was run in)."""
        for arg in self.config.args:
            base = Path(self.config.invocation_params.dir, str(arg).split("::")[0]).resolve()
            if path == base or base in path.parents:
                return True
        return False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        """A skip's location is the learner's file (not the line of this plugin that raised it), so
        pytest folds the CUDA skips of one file into one line of `-rs`."""
        outcome = yield
        report = outcome.get_result()
        if isinstance(item, CheckItem) and report.skipped and isinstance(report.longrepr, tuple):
            report.longrepr = (os.fspath(item.path), None, report.longrepr[2])


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


class AttemptFile(pytest.File):
    """A learner's file, mapped to one exercise (or several): one ExerciseNode each."""

    def __init__(self, *, targets: list[Target], device: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.targets = targets
        self.device = device

    def collect(self) -> Any:
        for target in self.targets:
            yield ExerciseNode.from_parent(self, name=target.exercise.id, exercise=target.exercise, device=self.device)


class ExerciseNode(pytest.Collector):
    """One exercise's checks on one file. Graded once, when its first item runs; the grade is kept here."""

    def __init__(self, *, exercise: Exercise, device: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.exercise = exercise
        self.device = device
        self.result: GradeResult | None = None
        self.output_reported = False

    def collect(self) -> Any:
        from mlprep.grading.engine import IMPORT_CHECK, collect_checks, load_module, module_name, plan_runs

        try:
            grader = load_module(module_name("grader", self.exercise.id), self.exercise.grader_path)
            names = [IMPORT_CHECK] + [name for name, *_ in plan_runs(collect_checks(grader), self.device)]
        except Exception as exc:  # a broken grader is mlprep's defect: no verdict can come of it
            raise self.CollectError(f"{DEFECT}: the grader of {self.exercise.id} could not be loaded: {type(exc).__name__}: {exc}") from None
        for name in names:
            # "::" separates a node id's parts: a check named "stumps[1::2]" must stay one part.
            yield CheckItem.from_parent(self, name=name.replace("::", ": :"), check_name=name)

    def setup(self) -> None:
        from mlprep.practice.grading import grade_attempt

        try:
            self.result = grade_attempt(self.exercise, self.path, device=self.device)
        except Exception as exc:  # noqa: BLE001 - the engine raising is mlprep's defect, reported as such on every item
            pytest.fail(f"{DEFECT}: grading {self.exercise.id} raised {type(exc).__name__}: {exc}\n\n{traceback.format_exc()}", pytrace=False)

    def verdict_of(self, name: str) -> CheckResult:
        """The verdict of the check `name`; a check the grade lacks, or one mlprep failed to judge, fails the item's setup as mlprep's defect."""
        assert self.result is not None
        check = next((c for c in self.result.checks if c.name == name), None)
        if check is None:
            why = self.result.message if self.result.internal_error else f"the grade of {self.exercise.id} has no verdict for the check {name!r}"
            pytest.fail(why if why.startswith("internal error") else f"{DEFECT}: {why}", pytrace=False)
        if check.details.get("internal_error"):
            pytest.fail(f"{DEFECT}: {check.message}\n\n{check.details.get('traceback', '')}".rstrip(), pytrace=False)
        return check


class CheckItem(pytest.Item):
    """One check of one exercise's grade."""

    parent: ExerciseNode

    def __init__(self, *, check_name: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.check_name = check_name
        self.verdict: CheckResult | None = None

    def setup(self) -> None:
        self.verdict = self.parent.verdict_of(self.check_name)

    def runtest(self) -> None:
        check = self.verdict
        assert check is not None
        if check.status == "pass":
            return
        if check.status == "skip":
            pytest.skip(check.message or "not run")
        from mlprep.screen.render import failure_text

        result = self.parent.result
        if result is not None and result.output and not self.parent.output_reported:
            self.parent.output_reported = True  # once per grade: it is the whole grade's output, not this check's
            self.add_report_section("call", "output of your code (the whole grade)", result.output)
        text = failure_text(check, [check.name], details=self.config.get_verbosity() > 0).plain
        head, _, body = text.partition("\n")
        if head.startswith(check.status.upper()):  # "FAIL <check name>": pytest's header names the check already
            text = body
        # pytest's one-line summary shows the first line: "Failed: <what went wrong>" for a wrong answer, "Failed: error: ..." else.
        pytest.fail(text if check.status == "fail" else f"{check.status}: {text}", pytrace=False)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"{self.parent.exercise.id}: {self.check_name}"
