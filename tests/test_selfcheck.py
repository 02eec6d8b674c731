"""The self-check machinery on the fixture bank: misses are reported, never hidden."""

import shutil
from pathlib import Path

from mlprep.bank import load_bank
from mlprep.kinds.selfcheck import run_selfcheck

FIXTURES = Path(__file__).parent / "fixtures"


def test_fixture_bank_self_check_is_ok():
    report = run_selfcheck(load_bank(FIXTURES / "runner_bank"), ["add"])
    assert report.ok, report.to_dict()
    (add,) = report.exercises
    assert add.reference == "pass" and add.stub != "pass"
    assert [(b.name, b.caught_by) for b in add.bugs] == [("subtracts", ["adds float64 arrays", "adds integers"])]
    assert add.generated[0].status == "fail"
    data = report.to_dict()
    assert data["ok"] is True and data["exercises"][0]["bugs"][0]["caught_by"]


def test_an_uncaught_bug_and_a_bad_edit_are_reported(tmp_path):
    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "runner_bank", bank)
    (bank / "solutions" / "add" / "bugs.toml").write_text(
        '[[bug]]\nname = "harmless"\nsummary = "a comment"\n[[bug.edit]]\nold = "return a + b"\nnew = "return a + b  # same"\n'
    )
    report = run_selfcheck(load_bank(bank), ["add"])
    assert not report.ok
    assert any("harmless is not caught" in p for p in report.exercises[0].problems)

    (bank / "solutions" / "add" / "bugs.toml").write_text('[[bug]]\nname = "ghost"\nsummary = "x"\n[[bug.edit]]\nold = "not in the file"\nnew = "y"\n')
    report = run_selfcheck(load_bank(bank), ["add"])
    assert not report.ok and any("occurs 0 times" in p for p in report.exercises[0].problems)


def test_a_rejected_alternative_is_a_miss(tmp_path):
    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "runner_bank", bank)
    alt = bank / "solutions" / "add" / "alternatives"
    alt.mkdir()
    (alt / "off_by_one.py").write_text("def add(a, b):\n    return a + b + 1\n")
    report = run_selfcheck(load_bank(bank), ["add"])
    assert not report.ok
    assert report.exercises[0].alternatives[0].status == "fail"


def test_a_reference_that_uses_most_of_the_time_limit_is_a_problem():
    """timeout_s bounds a whole grade: a reference that needs most of it leaves a slower correct solution no time."""
    from mlprep.kinds import kind_of
    from mlprep.kinds.code import REFERENCE_SHARE_OF_LIMIT
    from mlprep.kinds.proof import ToGrade
    from mlprep.results import CheckResult, GradeResult

    exercise = load_bank(FIXTURES / "runner_bank").get("add")

    def reference_taking(seconds):
        checks = [CheckResult("imports", "pass", duration_s=0.1), CheckResult("adds", "pass", duration_s=seconds)]
        caught = GradeResult("add", "fail", "", [CheckResult("adds", "fail")])
        graded = [(ToGrade("reference", "reference", exercise.reference_path), GradeResult("add", "pass", "", checks)),
                  (ToGrade("bug", "subtracts", exercise.reference_path), caught)]
        return kind_of(exercise).prove(exercise, graded, "cpu")

    assert reference_taking(0.1 * exercise.timeout_s).ok
    slow = reference_taking(REFERENCE_SHARE_OF_LIMIT * exercise.timeout_s)
    assert not slow.ok and any("of the grade's 3 s time limit (timeout_s 3 s): raise timeout_s" in p for p in slow.problems)


def _debug_bank(tmp_path: Path) -> Path:
    """The fixture's add as a `debug` exercise: its stub is the reference with the planted bug."""
    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "runner_bank", bank)
    toml = bank / "exercises" / "add" / "exercise.toml"
    toml.write_text(toml.read_text().replace('kind = "code"', 'kind = "debug"'))
    (bank / "solutions" / "add" / "bugs.toml").write_text(
        '[[bug]]\nname = "subtracts"\nsummary = "a - b instead of a + b"\nplanted = true\n[[bug.edit]]\nold = "a + b"\nnew = "a - b"\n'
        '[[bug]]\nname = "adds_twice"\nsummary = "a wrong fix: a + b + b"\n[[bug.edit]]\nold = "a + b"\nnew = "a + b + b"\n'
    )
    (bank / "exercises" / "add" / "stub.py").write_text("def add(a, b):\n    return a - b\n")
    return bank


def test_a_debug_exercises_stub_is_its_reference_with_the_planted_bugs(tmp_path):
    bank = _debug_bank(tmp_path)
    report = run_selfcheck(load_bank(bank), ["add"])
    assert report.ok, report.exercises[0].problems
    (add,) = report.exercises
    assert add.stub == "fail" and {b.name for b in add.bugs} == {"subtracts", "adds_twice"}
    assert all(b.status == "fail" for b in add.bugs)

    (bank / "exercises" / "add" / "stub.py").write_text("def add(a, b):\n    return a * b  # another bug than the planted one\n")
    report = run_selfcheck(load_bank(bank), ["add"])
    assert not report.ok
    [problem] = [p for p in report.exercises[0].problems if "planted" in p]
    assert "stub.py is not the reference with its planted bugs" in problem and "-    return a - b" in problem and "+    return a * b" in problem


def test_planted_bugs_belong_to_debug_exercises_and_a_debug_exercise_needs_them(tmp_path):
    bank = _debug_bank(tmp_path)
    bugs = bank / "solutions" / "add" / "bugs.toml"
    bugs.write_text(bugs.read_text().replace("planted = true\n", ""))
    report = run_selfcheck(load_bank(bank), ["add"])
    assert any("a debug exercise needs planted bugs" in p for p in report.exercises[0].problems)

    toml = bank / "exercises" / "add" / "exercise.toml"
    toml.write_text(toml.read_text().replace('kind = "debug"', 'kind = "code"'))
    bugs.write_text(bugs.read_text().replace('summary = "a - b instead of a + b"\n', 'summary = "a - b instead of a + b"\nplanted = true\n'))
    report = run_selfcheck(load_bank(bank), ["add"])
    assert any("only a debug exercise has planted bugs" in p for p in report.exercises[0].problems)


def test_changed_proves_only_what_changed_since_the_last_proof_that_held(tmp_path):
    """`selfcheck --changed`: a cold cache proves everything; an unchanged exercise comes from the cache;
    an edit to any file of an exercise proves it again; a proof with a problem is never cached."""
    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "runner_bank", bank)
    ids = ["add", "softplus"]

    cold = run_selfcheck(load_bank(bank), ids, changed_only=True)
    assert cold.ok and cold.submissions > 0 and not any(e.cached for e in cold.exercises)
    warm = run_selfcheck(load_bank(bank), ids, changed_only=True)
    assert warm.submissions == 0 and all(e.cached for e in warm.exercises)
    assert warm.to_dict()["exercises"] == [{**e, "cached": True} for e in cold.to_dict()["exercises"]]
    assert not any(e.cached for e in run_selfcheck(load_bank(bank), ids).exercises)  # the default run proves everything

    reference = bank / "solutions" / "add" / "reference.py"
    reference.write_text(reference.read_text() + "\n# an edit\n")
    edited = run_selfcheck(load_bank(bank), ids, changed_only=True)
    assert {e.id: e.cached for e in edited.exercises} == {"add": False, "softplus": True}

    (bank / "solutions" / "add" / "bugs.toml").write_text(
        '[[bug]]\nname = "harmless"\nsummary = "a comment"\n[[bug.edit]]\nold = "return a + b"\nnew = "return a + b  # same"\n'
    )
    for _ in range(2):  # the miss is proved (and reported) each time
        missed = run_selfcheck(load_bank(bank), ["add"], changed_only=True)
        assert not missed.ok and not missed.exercises[0].cached and missed.submissions > 0
