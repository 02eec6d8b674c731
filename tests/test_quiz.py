"""Quizzes, follow-ups and stories on the fixture bank tests/fixtures/quiz_bank (a code exercise with
follow-ups, a quiz, a story): the answers file, grading, the key kept until a pass, misconception
names, seeds, review of a missed question alone, the interview's follow-ups, a story's structure."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlprep.kinds import questions as q
from mlprep.bank import load_bank
from mlprep.cli import app
from mlprep.errors import ExitStatus
from mlprep.progress.store import Store

REPO = Path(__file__).resolve().parents[1]
QUIZ_BANK = REPO / "tests" / "fixtures" / "quiz_bank"


@pytest.fixture(autouse=True)
def quiz_bank(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MLPREP_BANK", str(QUIZ_BANK))
    monkeypatch.setenv("COLUMNS", "200")
    return QUIZ_BANK


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


def the_quiz() -> q.Quiz:
    return q.load_quiz(load_bank().get("units-quiz"))


def answers_path(home: Path) -> Path:
    return home / "workspace" / "units-quiz" / "units_quiz_answers.toml"


def fill(path: Path, responses: dict) -> None:
    """Answer as a learner does: the letters this attempt's seed shows."""
    quiz = the_quiz()
    presentation, _, _ = q.read_answers_file(quiz, path)
    path.write_text(q.responses_file(quiz, presentation.seed, responses))


KEY = {"float32-bytes": 0, "million-floats": 4.0, "half-precision": frozenset({0, 1}), "prefix-order": (1, 0, 2, 3), "float64-bytes": 0, "bits-in-byte": 8.0}


def test_list_kind_quiz_and_story() -> None:
    assert [row["id"] for row in json.loads(run("list", "--kind", "quiz", "--json").stdout)] == ["units-quiz"]
    assert [row["id"] for row in json.loads(run("list", "--kind", "story", "--json").stdout)] == ["incident-story"]


def test_the_order_of_questions_and_options_comes_from_the_seed() -> None:
    quiz = the_quiz()
    first, again, other = q.Presentation.of(quiz, 11), q.Presentation.of(quiz, 11), q.Presentation.of(quiz, 12)
    assert first == again  # an attempt can be replayed from its seed
    assert first != other
    assert sorted(first.questions) == sorted(question.id for question in quiz.questions)
    for seed in range(20):  # whatever letters an option is shown under, the key's answers are right
        text = q.responses_file(quiz, seed, KEY)
        assert f"seed = {seed}" in text
        outcome = q.mark_text(quiz, text)
        assert outcome.passed and outcome.score == 1


def test_responses_are_read_in_every_form_a_learner_writes() -> None:
    quiz = the_quiz()
    presentation = q.Presentation.of(quiz, 3)
    multiple = quiz.question("half-precision")
    letters = [presentation.letter("half-precision", i) for i in (0, 1)]
    for text in ("".join(letters), ", ".join(letters).upper(), " ".join(reversed(letters))):
        assert q.parse_response(multiple, presentation, text) == (frozenset({0, 1}), "")
    numeric = quiz.question("million-floats")
    assert q.parse_response(numeric, presentation, "4") == (4.0, "")
    assert q.parse_response(numeric, presentation, "4.0e0") == (4.0, "")
    assert q.parse_response(numeric, presentation, 4) == (4.0, "")
    assert q.parse_response(numeric, presentation, "four") == (None, "'four' is not a number")
    single = quiz.question("float32-bytes")
    assert q.parse_response(single, presentation, "z")[1].startswith("'z': the options are the letters a, b, c, d")
    assert q.parse_response(single, presentation, "ab")[1] == "'ab': one letter for a single-choice question"
    ordering = quiz.question("prefix-order")
    assert q.parse_response(ordering, presentation, "ab")[1] == "'ab': an ordering names every letter once"
    assert q.parse_response(single, presentation, "") == (None, "")


def test_the_answers_file_is_written_graded_and_keeps_the_key_until_a_pass(mlprep_home: Path) -> None:
    started = run("attempt", "units-quiz", "--file")
    assert started.exit_code == 0, started.output
    path = answers_path(mlprep_home)
    text = path.read_text()
    assert "How many bytes does one float32 take?" in text and "seed = " in text
    assert "explanation" not in text and "32 bits are 4 bytes" not in text  # the key never reaches the workspace

    empty = run("grade", "units-quiz")
    assert empty.exit_code == ExitStatus.FAILED
    assert "0 of 6 questions right (0%); the pass mark is 80%" in empty.stdout

    fill(path, {**KEY, "million-floats": 32.0, "float32-bytes": 3})  # the bits-for-bytes misconception, on two questions
    wrong = run("grade", "units-quiz", "--json")
    graded = json.loads(wrong.stdout)
    assert graded["status"] == "fail" and graded["message"].startswith("4 of 6 questions right (67%)")
    failed = {c["details"]["question"]: c["message"] for c in graded["checks"] if c["status"] == "fail"}
    assert sorted(failed) == ["float32-bytes", "million-floats"]
    assert all("common misconception: it counts a float's bits where its bytes are asked" in m for m in failed.values())
    assert not any("4 MB" in m or "The answer:" in m for m in failed.values())  # not before a pass

    fill(path, {**KEY, "bits-in-byte": 7.0})  # 5 of 6: 83% passes the 80% mark, and the key opens
    passed = run("grade", "units-quiz")
    assert passed.exit_code == 0, passed.stdout
    assert "5 of 6 questions right (83%)" in passed.stdout and "The answer: 8." in passed.stdout and "A byte is 8 bits." in passed.stdout
    with Store.open_default() as store:
        assert store.statuses()["units-quiz"] == "passed"
    key = run("solution", "units-quiz")
    assert key.exit_code == 0 and "32 bits are 4 bytes." in key.stdout


def test_a_broken_answers_file_says_what_to_do(mlprep_home: Path) -> None:
    run("attempt", "units-quiz", "--file")
    path = answers_path(mlprep_home)
    path.write_text(path.read_text().replace("seed = ", "# seed = "))
    result = run("grade", "units-quiz")
    assert result.exit_code == ExitStatus.USAGE and "the `seed = ...` line is missing" in result.stderr and "mlprep reset units-quiz" in result.stderr
    assert run("reset", "units-quiz").exit_code == 0
    assert "seed = " in path.read_text()


def test_answering_in_the_terminal_fills_the_answers_file(mlprep_home: Path) -> None:
    run("attempt", "units-quiz", "--file")
    quiz = the_quiz()
    presentation, _, _ = q.read_answers_file(quiz, answers_path(mlprep_home))
    keys = ""
    for question_id in presentation.questions:
        question, answer = quiz.question(question_id), quiz.key[question_id].correct
        if question.type == "single":
            keys += presentation.letter(question_id, answer)
        elif question.type == "multiple":
            keys += "".join(presentation.letter(question_id, i) for i in answer) + "\n"
        elif question.type == "ordering":
            keys += "".join(presentation.letter(question_id, i) for i in answer) + "\n"
        else:
            keys += f"{answer:g}\n"
    done = subprocess.run([sys.executable, "-m", "mlprep", "attempt", "units-quiz"], input=keys, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 of 6 questions right (100%)" in done.stdout
    _, responses, _ = q.read_answers_file(quiz, answers_path(mlprep_home))
    assert responses == KEY  # the answers file holds them: the attempt can be regraded
    left = subprocess.run([sys.executable, "-m", "mlprep", "attempt", "units-quiz"], input="q", capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert left.returncode == 0 and "left the quiz: nothing graded" in left.stdout


def test_review_brings_back_a_missed_question_alone(mlprep_home: Path) -> None:
    import sqlite3
    from datetime import UTC, datetime, timedelta

    run("attempt", "units-quiz", "--file")
    fill(answers_path(mlprep_home), {**KEY, "bits-in-byte": 7.0})
    run("grade", "units-quiz")  # 5 of 6: bits-in-byte missed
    with sqlite3.connect(mlprep_home / "progress.sqlite3") as db:  # graded two days ago: due now
        db.execute("UPDATE grades SET graded_at = ?", ((datetime.now(UTC) - timedelta(days=2)).isoformat(timespec="seconds"),))
    listed = run("review", "--list")
    rows = [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("units-quiz")]
    assert rows == ["units-quiz/bits-in-byte"], listed.stdout  # the question, not the whole quiz
    again = run("review", stdin="8\n")
    assert again.exit_code == 0, again.output
    assert "a question you missed in units-quiz" in again.stdout and "How many bits are in a byte?" in again.stdout
    assert "How many bytes does one float32 take?" not in again.stdout  # alone
    assert "units-quiz/bits-in-byte: recalled; next review in 1 day" in again.stdout
    with Store.open_default() as store:
        assert ("question", "units-quiz/bits-in-byte") in store.review_states()
        assert store.reveals() == []  # recalled: nothing was revealed


def test_the_interview_asks_the_follow_ups_and_scores_them_apart(mlprep_home: Path, tmp_path: Path) -> None:
    exercise = load_bank().get("add-one")
    followups = q.load_quiz(exercise, followups=True)
    seed = 5
    presentation = q.Presentation.of(followups, random.Random(seed).randrange(1, 2**31))
    answers = {"float-add": presentation.letter("float-add", 0), "ints-in-python": "2\n"}  # one right, one wrong
    # e: the "editor" writes the code; q twice ends the interview; then the follow-ups' answers.
    keys = "eqq" + "".join(answers[question_id] for question_id in presentation.questions)
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[-1], 'w').write('def add_one(x):\\n    return x + 1\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120", "EDITOR": f"'{sys.executable}' '{editor}'"}
    untouched = subprocess.run([sys.executable, "-m", "mlprep", "interview", "--count", "1", "--seed", str(seed), "--manual-run"], input="qq",
                               capture_output=True, text=True, timeout=120, env=env)
    assert "the interview is over" in untouched.stdout and "follow-up questions" not in untouched.stdout  # no code written: nothing to ask about
    done = subprocess.run([sys.executable, "-m", "mlprep", "interview", "--count", "1", "--seed", str(seed), "--manual-run"], input=keys,
                          capture_output=True, text=True, timeout=120, env=env)
    assert "follow-up questions on add-one" in done.stdout, done.stdout + done.stderr
    assert "follow-up questions: 1 of 2 right" in done.stdout and "(scored apart from the code)" in done.stdout
    assert "Python ints never overflow" in done.stdout  # the explanation of the one missed
    [report] = [r for r in (mlprep_home / "workspace" / "interviews").glob("*/report.json") if "followups" in r.read_text()]
    data = json.loads(report.read_text())
    assert data["followups"]["right"] == 1 and data["followups"]["asked"] == 2
    assert {f["question"]: f["right"] for f in data["followups"]["questions"]} == {"float-add": True, "ints-in-python": False}
    assert data["exercises"][0]["id"] == "add-one"  # the code is scored in its own row


def test_a_story_is_graded_on_its_structure_and_shows_the_sample(mlprep_home: Path) -> None:
    started = run("attempt", "incident-story")
    assert started.exit_code == 0, started.output
    path = mlprep_home / "workspace" / "incident-story" / "incident_story.md"
    assert "## Situation" in path.read_text() and "## Prevention" in path.read_text()
    untouched = run("grade", "incident-story")
    assert untouched.exit_code == ExitStatus.FAILED
    assert "checks your answer's structure, not its content" in untouched.stdout
    assert "the sample answer, from the source text" in untouched.stdout and "12% drop in precision" in untouched.stdout
    sample = (QUIZ_BANK / "solutions" / "incident-story" / "sample.md").read_text()
    result = sample.split("## Result", 1)[1].split("## Prevention", 1)[0]
    vague = "\nThe hotfix restored precision to its baseline quickly, and the new validation and drift alerts later caught further small mismatches early.\n\n"
    path.write_text(sample.replace(result, vague))
    no_number = json.loads(run("grade", "incident-story", "--json").stdout)
    assert [c["name"] for c in no_number["checks"] if c["status"] == "fail"] == ["Result: a measured outcome"]
    path.write_text(sample)
    assert run("grade", "incident-story").exit_code == 0


def test_the_self_check_proves_quizzes_and_stories_and_reports_a_wrong_misconception(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    result = run("selfcheck", "--json")
    assert result.exit_code == 0, result.stdout
    report = {e["id"]: e for e in json.loads(result.stdout)["exercises"]}
    assert report["units-quiz"]["reference"] == "pass" and report["units-quiz"]["stub"] == "fail"
    assert {b["name"]: b["caught_by"] for b in report["units-quiz"]["bugs"]} == {
        "bits-for-bytes": ["float32-bytes", "million-floats"], "bfloat16-is-not-half": ["half-precision"]}
    assert report["incident-story"]["ok"]
    bank = tmp_path / "bank"
    shutil.copytree(QUIZ_BANK, bank)
    key = bank / "solutions" / "units-quiz" / "key.toml"
    key.write_text(key.read_text().replace("half-precision = [0]", "half-precision = [0, 1]"))  # the "misconception" is the right answer
    (bank / "solutions" / "add-one" / "followups_key.toml").write_text("[answer.float-add]\ncorrect = 0\nexplanation = \"x\"\n")
    monkeypatch.setenv("MLPREP_BANK", str(bank))
    broken = json.loads(run("selfcheck", "--json").stdout)
    problems = {e["id"]: e["problems"] for e in broken["exercises"]}
    assert any("misconception bfloat16-is-not-half: marked wrong on []" in p for p in problems["units-quiz"])
    assert any(p.startswith("follow-ups: ") and "must answer every question once" in p for p in problems["add-one"])
    assert broken["ok"] is False


# -- stories that read like an interviewer ----------------------------------------------------------


def story_with(result: str | None = None, prevention: str | None = None) -> str:
    """The fixture story's sample with its Result or its Prevention replaced."""
    sample = (QUIZ_BANK / "solutions" / "incident-story" / "sample.md").read_text()
    head, rest = sample.split("## Result", 1)
    old_result, old_prevention = rest.split("## Prevention", 1)
    return f"{head}## Result\n{result if result is not None else old_result}\n\n## Prevention\n{prevention if prevention is not None else old_prevention}\n"


def failed_story_checks(text: str) -> list[str]:
    from mlprep.kinds.story import grade_story_text

    return [c.name for c in grade_story_text(load_bank().get("incident-story"), text).checks if c.status != "pass"]


def test_a_story_result_with_any_quantified_outcome_passes_and_one_without_a_number_fails() -> None:
    unitless = "On the held-out month the retrained model moved accuracy 0.71 -> 0.84, F1 0.62 -> 0.79."
    assert failed_story_checks(story_with(result=unitless)) == []
    for result in ("Fraud caught per day went from 40 to 65 after the fix, and stayed there for the quarter.",
                   "The hotfix cut false positives by 12% within the same afternoon, against the week before.",
                   "Chargebacks cost us $40,000 less over the following quarter than over the quarter before it."):
        assert failed_story_checks(story_with(result=result)) == [], result
    vague = "The hotfix restored precision to its baseline quickly, and later caught further small mismatches early."
    assert failed_story_checks(story_with(result=vague)) == ["Result: a measured outcome"]


def test_a_reflection_or_a_change_of_process_counts_as_prevention() -> None:
    reflection = "What I'd change next time: label a sample of the tickets before training anything, not after."
    assert failed_story_checks(story_with(prevention=reflection)) == []
    process = "Since then every model release goes through a shared review with the data owners, who sign off the units."
    assert failed_story_checks(story_with(prevention=process)) == []
    nothing = "It was a hard week for everyone on the team, and we were all glad when it was over."
    assert failed_story_checks(story_with(prevention=nothing)) == ["Prevention: a step or a lesson"]


def test_a_long_run_of_digits_in_a_result_grades_in_milliseconds(mlprep_home: Path, tmp_path: Path) -> None:
    """Issue 23: the old measured-result expression backtracked (170 s at 20,000 digits); the check is one linear pass now."""
    story = tmp_path / "digits.md"
    story.write_text(story_with(result="Precision was " + "9" * 20_000 + " and more, in every week of the quarter that followed."))
    done = subprocess.run([sys.executable, "-m", "mlprep", "grade", "incident-story", "--file", str(story), "--json"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    from mlprep.kinds.story import quantified

    import time

    started = time.perf_counter()
    for text in ("9" * 20_000, "1." * 20_000, "1 " * 10_000, "<!--" * 20_000, "->" * 20_000):
        quantified(text)
    assert time.perf_counter() - started < 2


def test_a_story_file_too_large_is_refused_and_grading_stops_at_its_time_limit(mlprep_home: Path, tmp_path: Path) -> None:
    huge = tmp_path / "huge.md"
    huge.write_text(story_with(result="x " * 200_000))
    refused = run("grade", "incident-story", "--file", str(huge))
    assert refused.exit_code == ExitStatus.USAGE and "over 256 KiB" in refused.stderr
    story = tmp_path / "story.md"
    story.write_text(story_with())
    stopped = json.loads(run("grade", "incident-story", "--file", str(story), "--timeout", "1e-9", "--json").stdout)
    assert stopped["status"] == "timeout" and "time limit" in stopped["message"]


def test_a_story_grade_fits_one_screen_and_says_each_thing_once(mlprep_home: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from mlprep.kinds.story import grade_story_text
    from mlprep.screen.render import render_grade

    weak = "## Situation\nWe had a model.\n\n## Task\nFix it.\n\n## Action\nWe did things.\n\n## Result\nIt got better.\n\n## Prevention\nNothing.\n"
    result = grade_story_text(load_bank().get("incident-story"), weak)
    out = StringIO()
    render_grade(Console(file=out, width=80, color_system=None), result, path="incident_story.md")
    screen = out.getvalue()
    assert len(screen.splitlines()) <= 40, screen
    assert all(len(line.rstrip()) <= 80 for line in screen.splitlines())
    flat = " ".join(screen.split())
    for check in result.checks:
        assert flat.count(" ".join(check.message.split())) == 1, check.message
    assert "the sample answer's Situation" in flat and "12% drop in precision" in flat  # the sample's sections the failures are about
    assert "mlprep grade incident-story --verbose" in flat
    whole = StringIO()
    render_grade(Console(file=whole, width=80, color_system=None), result, verbose=True)
    assert "Prevention" in whole.getvalue() and "data contracts" in whole.getvalue()


def test_each_sample_says_truthfully_where_it_comes_from() -> None:
    from mlprep.kinds.story import check_story, sample_label

    bank = load_bank(REPO)
    assert sample_label(bank.get("data-pipeline-story")) == "written for mlprep from the source's outline (the source gives no sample)"
    assert sample_label(bank.get("prod-vs-staging")).startswith("from the source text, edited for mlprep")
    assert "unit mismatch" in sample_label(bank.get("prod-vs-staging"), note=True)
    assert "truncated decimals" not in (REPO / "solutions" / "prod-vs-staging" / "sample.md").read_text()
    pipeline = (REPO / "solutions" / "data-pipeline-story" / "sample.md").read_text()
    assert "drawn at random from the last three\n  months, the period the split below keeps for testing" in pipeline  # the test set is the time split's
    for story in ("data-pipeline-story", "prod-vs-staging"):
        assert check_story(bank.get(story)) == []


# -- quizzes: every answers file bounded, every parse error a usage error ---------------------------


def test_an_answers_file_that_cannot_be_one_is_a_usage_error(mlprep_home: Path, tmp_path: Path) -> None:
    run("attempt", "units-quiz", "--file")
    path = answers_path(mlprep_home)
    text = path.read_text()
    cases = {
        "seed.toml": (re.sub(r"seed = \d+", "seed = " + "1" * 5000, text), "seed"),  # past Python's integer-string limit: a ValueError in tomllib
        "negative.toml": (re.sub(r"seed = \d+", "seed = -5", text), "not an integer from 0 to 2^63"),
        "nested.toml": (text + "deep = " + "[" * 5000 + "\n", "nested too deep"),  # a RecursionError in tomllib
        "huge.toml": (text + "# padding\n" * 40_000, "over 256 KiB"),
        "junk.toml": ("this is not toml at all [[[", "not a valid answers file"),
    }
    for name, (content, said) in cases.items():
        (tmp_path / name).write_text(content)
        graded = run("grade", "units-quiz", "--file", str(tmp_path / name))
        assert graded.exit_code == ExitStatus.USAGE, (name, graded.output)
        assert said in graded.stderr and "mlprep reset" not in graded.stderr, (name, graded.stderr)  # about THAT file, not the workspace
        assert "mlprep attempt units-quiz --file" in graded.stderr
    path.write_text("this is not toml at all [[[")
    own = run("grade", "units-quiz")
    assert own.exit_code == ExitStatus.USAGE and "mlprep reset units-quiz" in own.stderr  # the learner's own attempt: start afresh


def test_a_huge_numeric_answer_is_read_as_a_problem_not_a_crash(mlprep_home: Path) -> None:
    run("attempt", "units-quiz", "--file")
    path = answers_path(mlprep_home)
    path.write_text(path.read_text().replace('million-floats = ""', "million-floats = " + "9" * 4000))
    graded = run("grade", "units-quiz", "--json")
    assert graded.exit_code == ExitStatus.FAILED, graded.output
    [check] = [c for c in json.loads(graded.stdout)["checks"] if c["details"]["question"] == "million-floats"]
    assert check["status"] == "fail" and "too large" in check["message"]


# -- reveals and the solution view -----------------------------------------------------------------


def test_review_of_a_missed_question_counts_as_a_reveal_when_it_shows_the_answer(mlprep_home: Path) -> None:
    import sqlite3
    from datetime import UTC, datetime, timedelta

    run("attempt", "units-quiz", "--file")
    fill(answers_path(mlprep_home), {**KEY, "bits-in-byte": 7.0, "million-floats": 32.0})  # 4 of 6: failed, two numbers missed
    run("grade", "units-quiz")
    with sqlite3.connect(mlprep_home / "progress.sqlite3") as db:
        db.execute("UPDATE grades SET graded_at = ?", ((datetime.now(UTC) - timedelta(days=2)).isoformat(timespec="seconds"),))
    assert "solutions revealed: 0" in run("progress").stdout
    again = run("review", stdin="7\n32\n")  # wrong again, whichever comes first: each shows its answer and explanation
    assert again.stdout.count("the answer:") == 2 and "A byte is 8 bits." in again.stdout, again.stdout
    assert "counted as a reveal of units-quiz's answers" in again.stdout
    with Store.open_default() as store:
        assert [(r.exercise_id, r.forced) for r in store.reveals()] == [("units-quiz", True), ("units-quiz", True)]
    assert "solutions revealed: 2 (2 before passing: units-quiz)" in run("progress").stdout


def test_the_solution_view_shows_the_learners_order_letters_and_answers(mlprep_home: Path) -> None:
    run("attempt", "units-quiz", "--file")
    path = answers_path(mlprep_home)
    fill(path, {**KEY, "float32-bytes": 3})
    quiz = the_quiz()
    presentation, _, _ = q.read_answers_file(quiz, path)
    shown = run("solution", "units-quiz", "--force")
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    positions = [text.index(quiz.question(question_id).text) for question_id in presentation.questions]
    assert positions == sorted(positions)  # the attempt's order of questions
    mine, key = presentation.letter("float32-bytes", 3), presentation.letter("float32-bytes", 0)
    block = text[text.index("How many bytes does one float32 take?"):]
    block = block[:block.index("\n\n")]
    for index in presentation.options["float32-bytes"]:  # the attempt's letters
        assert f"{presentation.letter('float32-bytes', index)}) {quiz.question('float32-bytes').options[index]}" in block
    assert f"your answer: {mine} ✗   the answer: {key}" in block
    assert "your answer: 8 ✓" in text


# -- screens that fit their width without breaking a word ------------------------------------------


def words_intact(screen: str, *phrases: str) -> bool:
    flat = " ".join(screen.split())
    return all(" ".join(phrase.split()) in flat for phrase in phrases)


def test_the_quiz_asker_fits_its_width_and_breaks_no_word(mlprep_home: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from mlprep.practice.questions import ask_quiz

    out = StringIO()
    console = Console(file=out, width=100, color_system=None)
    with Store.open_default() as store:
        ask_quiz(store, load_bank().get("units-quiz"), None, console, StringIO("q"))
    screen = out.getvalue()
    assert all(len(line) <= 100 for line in screen.splitlines()), screen
    assert words_intact(screen, "the pass mark is 80%", "Single keys pick an option; q leaves (nothing is graded).")
    # The toggled selection of an all-that-apply question is redrawn in place: never longer than the width.
    from mlprep.screen.asker import ask_questions

    quiz = the_quiz()
    presentation = q.Presentation.of(quiz, 3)
    narrow = StringIO()
    letters = "".join(presentation.letter("half-precision", i) for i in (0, 1))
    ask_questions(quiz, presentation, StringIO(letters + "\n"), Console(file=narrow, width=24, color_system=None), only=["half-precision"])
    assert [line for line in narrow.getvalue().splitlines() if line.startswith("selected")] and all(
        len(line) <= 24 for line in narrow.getvalue().splitlines() if line.startswith("selected")), narrow.getvalue()


def test_review_explanations_break_no_word(mlprep_home: Path) -> None:
    import sqlite3
    from datetime import UTC, datetime, timedelta
    from io import StringIO

    from rich.console import Console

    from mlprep.practice.questions import review_questions
    from mlprep.practice.review import due_reviews

    run("attempt", "units-quiz", "--file")
    fill(answers_path(mlprep_home), {**KEY, "bits-in-byte": 7.0})
    run("grade", "units-quiz")
    with sqlite3.connect(mlprep_home / "progress.sqlite3") as db:
        db.execute("UPDATE grades SET graded_at = ?", ((datetime.now(UTC) - timedelta(days=2)).isoformat(timespec="seconds"),))
    out = StringIO()
    with Store.open_default() as store:
        due = due_reviews(store, load_bank(), datetime.now(UTC))
        review_questions(store, load_bank(), due, lambda: datetime.now(UTC), Console(file=out, width=30, color_system=None), StringIO("7\n"))
    screen = out.getvalue()
    assert all(len(line) <= 30 for line in screen.splitlines()), screen
    assert words_intact(screen, "A byte is 8 bits.", "a question you missed in units-quiz")
