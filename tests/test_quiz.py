"""Quizzes, follow-ups and stories on the fixture bank tests/fixtures/quiz_bank (a code exercise with
follow-ups, a quiz, a story): the answers file, grading, the key kept until a pass, misconception
names, seeds, review of a missed question alone, the interview's follow-ups, a story's structure."""

from __future__ import annotations

import json
import os
import random
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
