"""`pytest --mlprep` (mlprep/pytest_plugin.py), run by pytester on sample solutions repositories.

Each run is a pytest subprocess (the plugin comes through its pytest11 entry point, as in a learner's
repository) grading against the fixture bank (tests/fixtures/bank, or a copy of it with a changed
grader), so every run takes about a second.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FIXTURE_BANK = Path(__file__).parent / "fixtures" / "bank"
CORRECT_ADD_ONE = (FIXTURE_BANK / "solutions" / "add-one" / "reference.py").read_text(encoding="utf-8")
WRONG_ADD_ONE = "def add_one(x):\n    return x + 2\n"
# Right on "the quick fox", wrong where words are separated by more than one space.
WRONG_REVERSE_WORDS = 'def reverse_words(s):\n    return " ".join(reversed(s.split(" ")))\n'
STUB_REVERSE_WORDS = (FIXTURE_BANK / "exercises" / "reverse-words" / "stub.py").read_text(encoding="utf-8")
IMPORT_CHECK = "your file imports and defines the interface"


def copy_bank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grader_edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of the fixture bank with text edits to graders ({exercise id: (old, new)}), as MLPREP_BANK."""
    bank = tmp_path / "bank"
    shutil.copytree(FIXTURE_BANK, bank, ignore=shutil.ignore_patterns("__pycache__"))
    for exercise_id, (old, new) in grader_edits.items():
        grader = bank / "graders" / f"{exercise_id}.py"
        source = grader.read_text(encoding="utf-8")
        assert source.count(old) == 1, (exercise_id, old)
        grader.write_text(source.replace(old, new), encoding="utf-8")
    monkeypatch.setenv("MLPREP_BANK", str(bank))
    return bank


def test_files_a_config_maps_are_graded_one_test_per_check(pytester: pytest.Pytester, fixture_bank: Path, mlprep_home: Path) -> None:
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = "solutions/add_one.py"\nreverse-words = "solutions/reverse_words.py"\n')
    pytester.mkdir("solutions")
    pytester.path.joinpath("solutions", "add_one.py").write_text(CORRECT_ADD_ONE, encoding="utf-8")
    pytester.path.joinpath("solutions", "reverse_words.py").write_text(WRONG_REVERSE_WORDS, encoding="utf-8")

    result = pytester.runpytest_subprocess("--mlprep", "-rA")

    result.assert_outcomes(passed=6, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "mlprep: 2 files to grade, from mlprep.toml [[]exercises[]] (device auto)",
        f"PASSED solutions/add_one.py::add-one::{IMPORT_CHECK}",
        "PASSED solutions/add_one.py::add-one::small integers",
        "PASSED solutions/reverse_words.py::reverse-words::three words",
        "FAILED solutions/reverse_words.py::reverse-words::repeated spaces and the empty string*",
    ])
    # The failure reads as `mlprep grade` shows it: the check's message, then the smallest failing input, plain text.
    result.stdout.fnmatch_lines([
        "*reverse-words: repeated spaces and the empty string*",
        "reverse_words('a  b   c'): expected 'c b a', got str 'c   b  a'",
        "  smallest failing input:",
        "    reverse_words('a  b   c')",
    ])
    assert "\x1b[" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()
    assert not (mlprep_home / "progress.sqlite3").exists(), "pytest --mlprep must not record grades in the progress store"


def test_the_workspace_layout_is_graded_without_a_config(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    pytester.mkdir("add-one")
    pytester.mkdir("reverse-words")
    pytester.path.joinpath("add-one", "add_one.py").write_text(WRONG_ADD_ONE, encoding="utf-8")
    pytester.path.joinpath("reverse-words", "reverse_words.py").write_text(STUB_REVERSE_WORDS, encoding="utf-8")
    pytester.makepyfile(notes="x = 1\n")  # not an attempt: not collected
    pytester.makepyfile(test_mine="def test_my_own():\n    pass\n")  # the learner's own tests run beside the grades

    result = pytester.runpytest_subprocess("--mlprep", "-v")

    result.assert_outcomes(passed=3, failed=5)
    result.stdout.fnmatch_lines_random([
        f"add-one/add_one.py::add-one::{IMPORT_CHECK} PASSED*",
        "add-one/add_one.py::add-one::small integers FAILED*",
        "add-one/add_one.py::add-one::floats FAILED*",
        f"reverse-words/reverse_words.py::reverse-words::{IMPORT_CHECK} PASSED*",
        "reverse-words/reverse_words.py::reverse-words::three words FAILED*",
        "test_mine.py::test_my_own PASSED*",
        "error: not implemented yet: NotImplementedError: reverse_words",
        # -v shows the details of a failure, as `mlprep grade --verbose` does.
        "add_one(0): 1 of 1 values differ*expected 1, got 2*",
        "  what: add_one(0)  ·  first_index: (scalar)  ·  expected: 1  ·  got: 2",
    ])
    assert "notes.py" not in result.stdout.str()


def test_pyproject_maps_files_too(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    pytester.makepyprojecttoml('[tool.mlprep.exercises]\nadd-one = "mine.py"\n')
    pytester.makepyfile(mine=CORRECT_ADD_ONE)

    result = pytester.runpytest_subprocess("--mlprep", "--collect-only", "-q")

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"mine.py::add-one::{IMPORT_CHECK}", "mine.py::add-one::small integers", "mine.py::add-one::negative numbers",
                                 "mine.py::add-one::floats", "4 tests collected*"])


def test_without_the_flag_nothing_is_collected(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = "add-one/add_one.py"\nnot-an-exercise = "nowhere.py"\n')
    pytester.mkdir("add-one")
    pytester.path.joinpath("add-one", "add_one.py").write_text(CORRECT_ADD_ONE, encoding="utf-8")

    result = pytester.runpytest_subprocess("-rA")

    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "mlprep" not in result.stdout.str().replace("mlprep-0.1.0", "")  # only the plugins line names it


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    """pytest loads every pytest11 plugin in every run: without --mlprep it must cost nothing."""
    code = ("import sys, mlprep.pytest_plugin; "
            "print(sorted(m for m in ('numpy', 'torch', 'rich', 'mlprep.grading.engine', 'mlprep.bank', 'mlprep.grading') if m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert imported == "[]"


def test_an_unknown_id_or_a_missing_file_is_a_collection_error(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = "add_one.py"\nadd-two = "add_one.py"\nreverse-words = "rw/reverse_words.py"\n')
    pytester.makepyfile(add_one=CORRECT_ADD_ONE)

    result = pytester.runpytest_subprocess("--mlprep")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR collecting mlprep.toml*",
        "mlprep.toml [[]exercises[]]: add-two = 'add_one.py': no exercise 'add-two'; did you mean 'add-one'?",
        f"mlprep.toml [[]exercises[]]: reverse-words = 'rw/reverse_words.py': no such file ({pytester.path / 'rw' / 'reverse_words.py'})",
        "*Interrupted: 1 error during collection*",
    ])
    assert "Traceback" not in result.stdout.str()


def test_a_config_that_does_not_parse_is_a_collection_error(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = add_one.py\n')

    result = pytester.runpytest_subprocess("--mlprep")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting mlprep.toml*", "mlprep.toml does not parse: *"])


def test_a_cuda_check_without_a_gpu_is_a_skip(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_bank(tmp_path, monkeypatch, {"add-one": ('@check("floats")', '@check("floats", devices=("cpu", "cuda"))')})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the same outcome on a machine with a GPU
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = "add_one.py"\n')
    pytester.makepyfile(add_one=CORRECT_ADD_ONE)

    auto = pytester.runpytest_subprocess("--mlprep", "-rs")
    auto.assert_outcomes(passed=4, skipped=1)  # never a pass of the CUDA scenario
    assert auto.ret == pytest.ExitCode.OK
    auto.stdout.fnmatch_lines(["SKIPPED [[]1[]] add_one.py: CUDA is not available on this machine; this scenario did not run"])

    cpu = pytester.runpytest_subprocess("--mlprep", "--mlprep-device", "cpu", "--collect-only", "-q")
    cpu.stdout.fnmatch_lines(["add_one.py::add-one::floats", "4 tests collected*"])
    assert "[cuda]" not in cpu.stdout.str()

    cuda = pytester.runpytest_subprocess("--mlprep", "--mlprep-device", "cuda")
    assert cuda.ret == pytest.ExitCode.USAGE_ERROR
    cuda.stderr.fnmatch_lines(["ERROR: mlprep: --mlprep-device cuda: no GPU is visible here*"])


def test_a_defect_of_mlprep_is_an_error_never_a_verdict(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_bank(tmp_path, monkeypatch, {
        "add-one": ('@check("floats")', '@check("grader bug")\ndef grader_bug(sub, ctx):\n    raise RuntimeError("oops in the grader")\n\n\n@check("floats")'),
        "reverse-words": ("from mlprep.grading", "import not_a_module_anywhere\nfrom mlprep.grading"),
    })
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = "add_one.py"\nreverse-words = "reverse_words.py"\n')
    pytester.makepyfile(add_one=CORRECT_ADD_ONE, reverse_words=STUB_REVERSE_WORDS)

    result = pytester.runpytest_subprocess("--mlprep", "--continue-on-collection-errors", "-rE")

    result.assert_outcomes(passed=4, errors=2)  # the check that broke, and the grader that does not load
    result.stdout.fnmatch_lines_random([
        "ERROR add_one.py::add-one::grader bug - *",
        "internal error in mlprep (a defect in mlprep or its grader, not your code): internal grader error*RuntimeError: oops in the grader",
        "*ERROR collecting reverse_words.py*",
        "internal error in mlprep (a defect in mlprep or its grader, not your code): the grader of reverse-words could not be loaded: *not_a_module_anywhere*",
    ])


def test_a_file_named_on_the_command_line_runs_only_in_the_sandbox(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    """pytest imports a .py file named on its command line as a test module; a learner's file must
    never run in pytest's own process. One check is selected by its node id."""
    pytester.makefile(".toml", mlprep='[exercises]\nadd-one = "add_one.py"\n')
    pytester.makepyfile(add_one='import os\nos.environ.setdefault("X", "")\nprint("IMPORTED IN", os.getpid())\n' + CORRECT_ADD_ONE)

    result = pytester.runpytest_subprocess("--mlprep", "-s", "-rA", "add_one.py::add-one::floats")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED add_one.py::add-one::floats"])
    assert "IMPORTED IN" not in result.stdout.str()


def test_a_mapped_file_outside_testpaths_is_a_collection_error(pytester: pytest.Pytester, fixture_bank: Path) -> None:
    """A bare `pytest --mlprep` with testpaths = ["tests"] would otherwise pass without grading anything."""
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.mlprep.exercises]\nadd-one = "solutions/add_one.py"\n')
    pytester.mkdir("tests")
    pytester.path.joinpath("tests", "test_mine.py").write_text("def test_my_own():\n    pass\n", encoding="utf-8")
    pytester.mkdir("solutions")
    pytester.path.joinpath("solutions", "add_one.py").write_text(CORRECT_ADD_ONE, encoding="utf-8")

    bare = pytester.runpytest_subprocess("--mlprep")
    assert bare.ret == pytest.ExitCode.INTERRUPTED
    bare.stdout.fnmatch_lines(["add-one: solutions/add_one.py is outside testpaths (tests), so nothing graded it: run `pytest --mlprep .`*"])

    everything = pytester.runpytest_subprocess("--mlprep", ".")
    everything.assert_outcomes(passed=5)
