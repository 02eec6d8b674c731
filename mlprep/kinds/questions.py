"""Concept quizzes: questions with a hidden key, answered in the terminal or in an answers file.

A quiz is a bank folder like any exercise (kind = "quiz"):

    exercises/<id>/exercise.toml   pass_mark (the share of questions right to pass, 0.8 by default)
    exercises/<id>/prompt.md       what the quiz covers
    exercises/<id>/quiz.toml       [[question]] id, type (single | multiple | numeric | ordering), text, options, unit
    solutions/<id>/key.toml        [answer.<question id>] correct | value (+ tolerance | rel_tolerance) | order,
                                   explanation; [[misconception]] name, summary, answers

A code exercise's interview follow-ups are the same two files, exercises/<id>/followups.toml and
solutions/<id>/followups_key.toml. The key never reaches the workspace.

Each attempt shows the questions, and each question's options, in an order drawn from a seed that the
attempt records (in its answers file, `seed = ...`), so an attempt can be replayed; answers are kept
as option indices of quiz.toml, whatever letters they were shown under. A question's correct answer
and explanation are shown once the quiz is passed or revealed; before that, a wrong answer that is a
recorded misconception is named as one.

`python -m mlprep.kinds.questions check ID [--followups]` validates a quiz (a content author's shortcut: the
self-check runs the same).

Light (no numpy, no torch): the quick commands import it.
"""

from __future__ import annotations

import math
import random
import re
import string
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlprep.bank import Exercise
from mlprep.errors import MlprepError
from mlprep.results import CheckResult, GradeResult

TYPES = ("single", "multiple", "numeric", "ordering")
DEFAULT_PASS_MARK = 0.8
LETTERS = string.ascii_lowercase
TYPE_HELP = {
    "single": "one letter",
    "multiple": "every letter that applies, e.g. \"ac\"",
    "numeric": "a number",
    "ordering": "all the letters, first to last, e.g. \"cabd\"",
}


@dataclass(frozen=True)
class Question:
    """One question of a quiz, as its questions file states it."""
    id: str
    type: str
    text: str
    options: tuple[str, ...] = ()
    unit: str = ""


@dataclass(frozen=True)
class Answer:
    """The key of one question: `correct` is an option index (single), a frozenset of them
    (multiple), a number (numeric: within tolerance, absolute, or rel_tolerance) or a tuple of
    indices first to last (ordering)."""

    correct: Any
    explanation: str
    tolerance: float = 0.0
    rel_tolerance: float = 0.0

    def accepts(self, response: Any) -> bool:
        if response is None:
            return False
        if isinstance(self.correct, float):
            bound = max(self.tolerance, self.rel_tolerance * abs(self.correct))
            return isinstance(response, float) and math.isfinite(response) and abs(response - self.correct) <= bound * (1 + 1e-12) + 1e-12 * abs(self.correct)
        return response == self.correct


@dataclass(frozen=True)
class Misconception:
    """A known wrong belief: the answers it gives, which the self-check grades as a submission."""
    name: str
    summary: str
    answers: dict[str, Any]  # question id -> the response it gives


@dataclass(frozen=True)
class Quiz:
    """A quiz: its questions, their key and its misconceptions."""
    id: str
    title: str
    questions: tuple[Question, ...]
    key: dict[str, Answer]
    misconceptions: tuple[Misconception, ...]
    pass_mark: float = DEFAULT_PASS_MARK

    def question(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        raise MlprepError(f"{self.id} has no question {question_id!r}")


# -- loading -----------------------------------------------------------------------------------------


def quiz_files(exercise: Exercise, followups: bool = False) -> tuple[Path, Path]:
    if followups:
        return exercise.dir / "followups.toml", exercise.solution_dir / "followups_key.toml"
    return exercise.dir / "quiz.toml", exercise.solution_dir / "key.toml"


def has_followups(exercise: Exercise) -> bool:
    return all(path.is_file() for path in quiz_files(exercise, followups=True))


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MlprepError(f"missing {path}") from None
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError, a bad UTF-8 byte, an integer past Python's digit limit, nesting too deep
        raise MlprepError(f"{path} does not parse: {_parse_error(exc)}") from None


def _parse_error(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "its arrays or tables are nested too deep"
    if isinstance(exc, ValueError) and not isinstance(exc, (tomllib.TOMLDecodeError, UnicodeDecodeError)):
        return f"a value is out of range ({str(exc).split(';')[0]})"
    return str(exc)


def _response(question: Question, value: Any, where: str) -> Any:
    """A key's or a misconception's answer in the internal form (option indices of quiz.toml)."""
    n = len(question.options)

    def index(i: Any) -> int:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
            raise MlprepError(f"{where}: {i!r} is not an option index of {question.id!r} (0 to {n - 1})")
        return i

    if question.type == "single":
        return index(value)
    if question.type == "multiple":
        if not isinstance(value, list) or not value:
            raise MlprepError(f"{where}: a multiple-choice answer is a non-empty list of option indices")
        return frozenset(index(i) for i in value)
    if question.type == "ordering":
        if not isinstance(value, list) or sorted(index(i) for i in value) != list(range(n)):
            raise MlprepError(f"{where}: an ordering is a list of every option index once")
        return tuple(value)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise MlprepError(f"{where}: a numeric answer is a number")
    return float(value)


def load_quiz(exercise: Exercise, followups: bool = False) -> Quiz:
    """The questions and the key, checked: every question answered once, option indices in range."""
    questions_path, key_path = quiz_files(exercise, followups)
    questions: list[Question] = []
    for number, raw in enumerate(_toml(questions_path).get("question", []), start=1):
        where = f"{questions_path}: question {number}"
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("text"), str):
            raise MlprepError(f"{where} needs an id and a text")
        kind = raw.get("type")
        if kind not in TYPES:
            raise MlprepError(f"{where} ({raw['id']}): type must be one of {', '.join(TYPES)}, not {kind!r}")
        options = raw.get("options", [])
        if kind != "numeric" and (not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS) or not all(isinstance(o, str) for o in options)):
            raise MlprepError(f"{where} ({raw['id']}): a {kind} question needs 2 or more options (strings)")
        if kind == "numeric" and options:
            raise MlprepError(f"{where} ({raw['id']}): a numeric question has no options")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", raw["id"]):
            raise MlprepError(f"{where}: the id {raw['id']!r} must be kebab-case (a-z, 0-9, -)")
        questions.append(Question(raw["id"], kind, raw["text"].strip(), tuple(options), str(raw.get("unit", ""))))
    ids = [q.id for q in questions]
    if not questions:
        raise MlprepError(f"{questions_path}: no [[question]]")
    if len(set(ids)) != len(ids):
        raise MlprepError(f"{questions_path}: question ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    by_id = {q.id: q for q in questions}
    data = _toml(key_path)
    answers = data.get("answer", {})
    if sorted(answers) != sorted(ids):
        missing, extra = sorted(set(ids) - set(answers)), sorted(set(answers) - set(ids))
        raise MlprepError(f"{key_path}: the key must answer every question once (missing: {missing or 'none'}, unknown: {extra or 'none'})")
    key: dict[str, Answer] = {}
    for question_id, raw in answers.items():
        question, where = by_id[question_id], f"{key_path}: answer.{question_id}"
        explanation = raw.get("explanation", "")
        if not isinstance(explanation, str) or not explanation.strip():
            raise MlprepError(f"{where}: every answer needs an explanation")
        field_name = {"single": "correct", "multiple": "correct", "numeric": "value", "ordering": "order"}[question.type]
        if field_name not in raw:
            raise MlprepError(f"{where}: a {question.type} answer is given as `{field_name} = ...`")
        tolerance, rel_tolerance = float(raw.get("tolerance", 0.0)), float(raw.get("rel_tolerance", 0.0))
        if tolerance < 0 or rel_tolerance < 0:
            raise MlprepError(f"{where}: tolerances are not negative")
        key[question_id] = Answer(_response(question, raw[field_name], where), explanation.strip(), tolerance, rel_tolerance)
    misconceptions = []
    for raw in data.get("misconception", []):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not isinstance(raw.get("summary"), str) or not isinstance(raw.get("answers"), dict) or not raw["answers"]:
            raise MlprepError(f"{key_path}: a [[misconception]] needs a name, a summary and answers")
        given = {}
        for question_id, value in raw["answers"].items():
            if question_id not in by_id:
                raise MlprepError(f"{key_path}: misconception {name!r} answers an unknown question {question_id!r}")
            given[question_id] = _response(by_id[question_id], value, f"{key_path}: misconception {name!r}, {question_id}")
        misconceptions.append(Misconception(name, raw["summary"].strip(), given))
    pass_mark = float(_toml(exercise.dir / "exercise.toml").get("pass_mark", DEFAULT_PASS_MARK))
    if not 0 < pass_mark <= 1:
        raise MlprepError(f"{exercise.dir / 'exercise.toml'}: pass_mark must be in (0, 1]")
    return Quiz(exercise.id, exercise.title, tuple(questions), key, tuple(misconceptions), pass_mark)


# -- an attempt's order: questions and options shuffled by a recorded seed --------------------------


@dataclass(frozen=True)
class Presentation:
    """The order an attempt shows: `questions` (ids), and per question the option indices in the
    order of the letters a, b, c..."""

    seed: int
    questions: tuple[str, ...]
    options: dict[str, tuple[int, ...]]

    @classmethod
    def of(cls, quiz: Quiz, seed: int) -> Presentation:
        rng = random.Random(seed)
        order = [q.id for q in quiz.questions]
        rng.shuffle(order)
        options = {}
        for question in quiz.questions:
            shown = list(range(len(question.options)))
            rng.shuffle(shown)
            options[question.id] = tuple(shown)
        return cls(seed, tuple(order), options)

    @classmethod
    def canonical(cls, quiz: Quiz) -> Presentation:
        """quiz.toml's own order, options lettered as written (a view with no attempt behind it)."""
        return cls(0, tuple(q.id for q in quiz.questions), {q.id: tuple(range(len(q.options))) for q in quiz.questions})

    def letter(self, question_id: str, option: int) -> str:
        return LETTERS[self.options[question_id].index(option)]

    def option(self, question_id: str, letter: str) -> int | None:
        position = LETTERS.find(letter)
        shown = self.options[question_id]
        return shown[position] if 0 <= position < len(shown) else None


def new_seed() -> int:
    return random.SystemRandom().randrange(1, 2**31)


def parse_response(question: Question, presentation: Presentation, text: Any) -> tuple[Any, str]:
    """(the response in option indices, or None when blank; "" or why it could not be read)."""
    if question.type == "numeric":
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            try:
                value = float(text)
            except OverflowError:
                return None, "the number is too large"
            return (value, "") if math.isfinite(value) else (None, f"{text!r} is not a finite number")
        raw = str(text).strip().replace(",", "").replace("_", "")
        if not raw:
            return None, ""
        try:
            value = float(raw)
        except ValueError:
            return None, f"{str(text)!r} is not a number"
        return (value, "") if math.isfinite(value) else (None, f"{str(text)!r} is not a finite number")
    letters = re.sub(r"[\s,;]+", "", str(text).lower())
    if not letters:
        return None, ""
    chosen = [presentation.option(question.id, c) for c in letters]
    if any(c is None for c in chosen):
        valid = LETTERS[: len(question.options)]
        return None, f"{str(text)!r}: the options are the letters {', '.join(valid)}"
    if question.type == "single":
        return (chosen[0], "") if len(chosen) == 1 else (None, f"{str(text)!r}: one letter for a single-choice question")
    if question.type == "multiple":
        return frozenset(chosen), ""
    if sorted(chosen) != list(range(len(question.options))):
        return None, f"{str(text)!r}: an ordering names every letter once"
    return tuple(chosen), ""


def show_response(question: Question, presentation: Presentation, response: Any) -> str:
    """A response as the learner's letters (and the options' texts), or the number."""
    if response is None:
        return "no answer"
    if question.type == "numeric":
        return f"{response:g}" + (f" {question.unit}" if question.unit else "")
    chosen = [response] if question.type == "single" else sorted(response, key=lambda i: presentation.letter(question.id, i)) \
        if question.type == "multiple" else list(response)
    return ", ".join(f"{presentation.letter(question.id, i)}) {question.options[i]}" for i in chosen)


# -- the answers file ------------------------------------------------------------------------------


def answers_filename(exercise_id: str) -> str:
    return exercise_id.replace("-", "_") + "_answers.toml"


def _comment(text: str, width: int = 96, indent: str = "# ") -> list[str]:
    import textwrap

    return [indent + line for line in textwrap.wrap(text, width - len(indent)) or [""]]


def answers_template(quiz: Quiz, seed: int) -> str:
    """A TOML answers file: the questions as comments, an empty answer for each, and the seed."""
    presentation = Presentation.of(quiz, seed)
    lines = [f"# mlprep quiz: {quiz.id} ({quiz.title})",
             f"# Answer each question between the quotes, then run `mlprep grade {quiz.id}`.",
             f"# {len(quiz.questions)} questions; the pass mark is {quiz.pass_mark:.0%}.",
             "# The seed gives this attempt's order of questions and options: keep it as it is.",
             f"seed = {seed}", "", "[answers]"]
    for number, question_id in enumerate(presentation.questions, start=1):
        question = quiz.question(question_id)
        lines.append("")
        lines += _comment(f"Q{number}. {question.text}")
        lines += [f"#   {presentation.letter(question.id, i)}) {question.options[i]}" for i in presentation.options[question.id]]
        lines.append(f"# ({TYPE_HELP[question.type]}{', in ' + question.unit if question.unit else ''})")
        lines.append(f'{question.id} = ""')
    return "\n".join(lines) + "\n"


MAX_ANSWERS_BYTES = 256 * 1024  # a quiz's answers file is a few KiB: anything near this is not one
MAX_SEED = 2**63  # new_seed draws below 2**31; a seed is any integer of 0 <= seed < 2**63


def is_own_attempt(quiz_id: str, path: Path) -> bool:
    """Whether `path` is the learner's attempt of the quiz, where `mlprep reset` writes a fresh one
    (<workspace>/<id>/<id>_answers.toml), rather than a file given with --file."""
    path = Path(path)
    return path.name == answers_filename(quiz_id) and path.parent.name == quiz_id


def read_answers_file(quiz: Quiz, path: Path) -> tuple[Presentation, dict[str, Any], dict[str, str]]:
    """(the attempt's presentation, responses by question id, problems by question id). A file that
    cannot be an answers file (unreadable, too large, not TOML, without a usable seed) is a usage
    error that says what is wrong with it, and, for the learner's own attempt, how to start afresh."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_ANSWERS_BYTES + 1)
    except OSError as exc:
        raise MlprepError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_ANSWERS_BYTES:
        raise MlprepError(f"{path} is over {MAX_ANSWERS_BYTES // 1024} KiB: a quiz's answers file is a few KiB of `question-id = \"answer\"` lines"
                          + _fresh_file_hint(quiz.id, path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MlprepError(f"{path} is not UTF-8 text (byte {exc.start})" + _fresh_file_hint(quiz.id, path)) from None
    return read_answers(quiz, text, str(path), own=is_own_attempt(quiz.id, Path(path)))


def _fresh_file_hint(quiz_id: str, path: Path | str, own: bool | None = None) -> str:
    if own if own is not None else is_own_attempt(quiz_id, Path(path)):
        return f"; fix it, or `mlprep reset {quiz_id}` writes a fresh answers file (this one is backed up)"
    return f"; an answers file is TOML like the one `mlprep attempt {quiz_id} --file` writes"


def read_answers(quiz: Quiz, text: str, path: str = "the answers file", *, own: bool = False) -> tuple[Presentation, dict[str, Any], dict[str, str]]:
    """As read_answers_file, from the text; `own`: it is the learner's attempt (the errors point to `mlprep reset`)."""
    if len(text) > MAX_ANSWERS_BYTES:
        raise MlprepError(f"{path} is over {MAX_ANSWERS_BYTES // 1024} KiB: a quiz's answers file is a few KiB" + _fresh_file_hint(quiz.id, path, own))
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError; an integer past Python's digit limit; nesting too deep
        raise MlprepError(f"{path} is not a valid answers file: {_parse_error(exc)}" + _fresh_file_hint(quiz.id, path, own)) from None
    seed = data.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < MAX_SEED:
        what = "missing" if seed is None else f"not an integer from 0 to 2^63 (it is {_short(seed)})"
        raise MlprepError(f"{path}: the `seed = ...` line is {what}; it gives the order of the questions and options"
                          + _fresh_file_hint(quiz.id, path, own))
    presentation = Presentation.of(quiz, seed)
    given = data.get("answers", {})
    if not isinstance(given, dict):
        raise MlprepError(f"{path}: [answers] must be a table of `question-id = \"answer\"` lines" + _fresh_file_hint(quiz.id, path, own))
    responses, problems = {}, {}
    for question in quiz.questions:
        responses[question.id], problems[question.id] = parse_response(question, presentation, given.get(question.id, ""))
    return presentation, responses, problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}… ({len(text)} characters)"


def responses_file(quiz: Quiz, seed: int, responses: dict[str, Any]) -> str:
    """An answers file holding these responses (the self-check's key and misconception files)."""
    presentation = Presentation.of(quiz, seed)
    text = answers_template(quiz, seed)
    for question in quiz.questions:
        response = responses.get(question.id)
        if response is None:
            continue
        if question.type == "numeric":
            value = repr(float(response))
        elif question.type == "single":
            value = presentation.letter(question.id, response)
        elif question.type == "multiple":
            value = "".join(sorted(presentation.letter(question.id, i) for i in response))
        else:
            value = "".join(presentation.letter(question.id, i) for i in response)
        text = text.replace(f'\n{question.id} = ""\n', f'\n{question.id} = "{value}"\n')
    return text


# -- grading ---------------------------------------------------------------------------------------


@dataclass
class QuizOutcome:
    """A graded answers file: the responses, which were right, and the misconception behind each wrong one."""
    quiz: Quiz
    presentation: Presentation
    responses: dict[str, Any]
    right: dict[str, bool] = field(default_factory=dict)
    misconceptions: dict[str, Misconception] = field(default_factory=dict)  # question id -> the one its wrong answer is

    @property
    def score(self) -> float:
        return sum(self.right.values()) / len(self.right)

    @property
    def passed(self) -> bool:
        return self.score >= self.quiz.pass_mark - 1e-12


def mark(quiz: Quiz, presentation: Presentation, responses: dict[str, Any]) -> QuizOutcome:
    outcome = QuizOutcome(quiz, presentation, responses)
    for question in quiz.questions:
        response = responses.get(question.id)
        outcome.right[question.id] = quiz.key[question.id].accepts(response)
        if not outcome.right[question.id] and response is not None:
            for misconception in quiz.misconceptions:
                if question.id in misconception.answers and misconception.answers[question.id] == response:
                    outcome.misconceptions[question.id] = misconception
                    break
    return outcome


def as_grade(outcome: QuizOutcome, *, reveal: bool, problems: dict[str, str] | None = None) -> GradeResult:
    """The quiz's grade in the form every grade has: one check per question (in the attempt's order).
    The key's answer and explanation are in the messages only when `reveal` (passed, or revealed)."""
    quiz, presentation = outcome.quiz, outcome.presentation
    reveal = reveal or outcome.passed
    checks = []
    for number, question_id in enumerate(presentation.questions, start=1):
        question, answer = quiz.question(question_id), quiz.key[question_id]
        right, response = outcome.right[question_id], outcome.responses.get(question_id)
        parts = [f"your answer: {show_response(question, presentation, response)}."]
        problem = (problems or {}).get(question_id)
        if problem:
            parts.append(f"It could not be read: {problem}.")
        if not right and question_id in outcome.misconceptions:
            parts.append(f"That is a common misconception: it {outcome.misconceptions[question_id].summary}.")
        if reveal:
            if not right:
                parts.append(f"The answer: {show_response(question, presentation, answer.correct)}.")
            parts.append(answer.explanation)
        name = f"Q{number}. {question.text}"
        checks.append(CheckResult(name, "pass" if right else "fail", " ".join(parts), {"question": question_id, "type": question.type}))
    right = sum(outcome.right.values())
    message = f"{right} of {len(checks)} questions right ({outcome.score:.0%}); the pass mark is {quiz.pass_mark:.0%}"
    if not reveal and right < len(checks):
        message += f"; the answers and their explanations open once you pass (or with `mlprep solution {quiz.id} --force`)"
    return GradeResult(quiz.id, "pass" if outcome.passed else "fail", message, checks, device="")


def grade_answers_file(exercise: Exercise, path: Path, *, reveal: bool = False, timeout_s: float | None = None) -> GradeResult:
    """The grade of an answers file, bounded like code grading: a file over MAX_ANSWERS_BYTES, or one
    that does not parse, is a usage error; reading and marking are linear in the file; and a grade that
    passes its time limit (`timeout_s`, else the exercise's timeout_s) ends as a timeout."""
    import time

    started, limit = time.monotonic(), float(timeout_s) if timeout_s is not None else exercise.timeout_s
    quiz = load_quiz(exercise)
    presentation, responses, problems = read_answers_file(quiz, path)
    if time.monotonic() - started <= limit:
        result = as_grade(mark(quiz, presentation, responses), reveal=reveal, problems=problems)
        if time.monotonic() - started <= limit:
            return result
    return GradeResult(exercise.id, "timeout", f"grading stopped at its time limit ({limit:g} s)", [], device="")


def fill_answers(quiz: Quiz, path: Path, seed: int, responses: dict[str, Any]) -> None:
    """Write the responses into the attempt's answers file (the attempt can be regraded and replayed)."""
    from mlprep.workspace import atomic_write

    atomic_write(path, responses_file(quiz, seed, responses))


# -- the self-check of a quiz ------------------------------------------------------------------------


@dataclass
class QuizCheck:
    """The grades the self-check takes of a quiz: its key, an empty file, and each misconception."""
    key: GradeResult | None = None
    empty: GradeResult | None = None
    misconceptions: list[tuple[Misconception, GradeResult, list[str]]] = field(default_factory=list)  # (m, grade, questions it got wrong)
    problems: list[str] = field(default_factory=list)


def check_quiz(exercise: Exercise, followups: bool = False, seeds: tuple[int, ...] = (1, 2, 3), pool: list[Quiz] | None = None) -> QuizCheck:
    """The key passes (under several seeds: the letters move, the key must not), an empty answers file
    fails, each misconception's answers file is marked wrong on every question it answers, the
    answers file's text reads back as written, and no key can be found without the knowledge
    (cue_problems: by its length, or from another question). `pool`: the sets its length is pooled
    with (default: every set of its kind in its bank, pooled_sets)."""
    report = QuizCheck()
    try:
        quiz = load_quiz(exercise, followups)
    except MlprepError as exc:
        report.problems.append(exc.message)
        return report
    if not followups and len(quiz.questions) < 6:
        report.problems.append(f"{len(quiz.questions)} questions: a quiz has at least 6")
    if not followups and len(quiz.misconceptions) < 2:
        report.problems.append(f"{len(quiz.misconceptions)} misconceptions: a quiz records at least 2")
    report.problems += cue_problems(quiz, pool=pooled_sets(exercise, followups) if pool is None else pool, followups=followups)
    key = {q.id: quiz.key[q.id].correct for q in quiz.questions}
    for seed in seeds:
        outcome = mark_text(quiz, responses_file(quiz, seed, key))
        if not all(outcome.right.values()):
            report.problems.append(f"the key's own answers file (seed {seed}) gets {[q for q, ok in outcome.right.items() if not ok]} wrong")
    report.key = as_grade(mark_text(quiz, responses_file(quiz, seeds[0], key)), reveal=True)
    report.empty = as_grade(mark_text(quiz, answers_template(quiz, seeds[0])), reveal=False)
    if report.empty.passed:
        report.problems.append("an empty answers file passes")
    for misconception in quiz.misconceptions:
        outcome = mark_text(quiz, responses_file(quiz, seeds[0], {**key, **misconception.answers}))
        wrong = [q for q, ok in outcome.right.items() if not ok]
        if sorted(wrong) != sorted(misconception.answers):
            report.problems.append(f"misconception {misconception.name}: marked wrong on {wrong}, but it answers {sorted(misconception.answers)}"
                                   " (a misconception's answers must be wrong ones)")
        named = [q for q, m in outcome.misconceptions.items() if m is misconception]
        if sorted(named) != sorted(misconception.answers):
            report.problems.append(f"misconception {misconception.name}: named on {named} only")
        report.misconceptions.append((misconception, as_grade(outcome, reveal=False), wrong))
    return report


# -- test-taking cues: a key found without the knowledge -------------------------------------------
#
# A test-wise learner who knows nothing of the topic still has two ways in: pick the longest option
# (authors make the right one the most careful, hence the longest), and read the answer off another
# question (a stem that states it, an option that spells it out). The rules below fail a set whose
# key can be found so; each names what to rewrite.
#
# 1. Longest too often. If lengths said nothing, the key of a single-choice question with k options
#    would be the longest one with probability 1/k (ties, rare, count against the key). Over a set
#    of n questions the count of keys that are the longest is then a sum of independent Bernoullis
#    (a Poisson-binomial: mean about n/k). A count above that distribution's one-sided 95% bound
#    (P(count > bound) <= CUE_ALPHA = 0.05) is evidence of a length cue at a 5% error rate: an
#    honest author fails it one time in twenty at most, and fixes it by lengthening a distractor.
#    The bound is near chance: 2 of 3, 4 of 8, 24 of 70, 27 of 83 (for 4 options each). It is
#    applied to each set, and to its pool: a learner meets every set of its kind in the bank (every
#    quiz; every code exercise's follow-ups, asked several exercises to an interview), so the cue is
#    learned across sets, and a 2- or 3-question follow-up set alone can never show it (2 of 2
#    happens by chance one time in 16). The pool's problem is reported on every set whose keys feed
#    the count. The same holds for the shortest option (the cue an author leaves by trimming every
#    key), and, over a pool, for either being too rare: if keys are never the longest nor the
#    shortest, a learner who drops both and guesses between the middle two is right half the time.
#    So a pool's count must also reach its lower 5% bound (12 of 70, 14 of 83); a set alone is too
#    small for that tail (none of 3 keys is the longest 42% of the time by chance).
# 2. Much longer. A key at least KEY_RATIO (1.5x) the length of its longest distractor gives itself
#    away on its own, however the rest of the set goes (single choice; for all-that-apply, any right
#    option 1.5x the longest wrong one), and longer by 15 characters or more: options of a word or two
#    ("sigmoid", "ReLU") differ in length by their names alone, which nobody reads as a cue.
# 3. Answered elsewhere. A key's distinctive phrase (PHRASE_WORDS = 4 consecutive words of a right
#    option, at least 2 of them content words (not stop words, not lone letters such as the P of
#    KL(P||Q)), that are not in its own stem or its own other options)
#    found in another question's stem, in another question's right option, or in any option of an
#    ordering (every step of an order is true) of the same set: the answers file shows them all at
#    once. A distractor of another question that shares the phrase gives nothing away (two questions
#    on the batch-norm and the layer-norm axis rightly offer each other's answer as a distractor).
#    And a numeric key's value (3 significant characters or more) written in another question.

CUE_ALPHA = 0.05
KEY_RATIO = 1.5
KEY_RATIO_MIN_CHARS = 15  # and longer by this much: one-word options ("sigmoid", "ReLU") differ by their names alone
PHRASE_WORDS = 4
_STOPWORDS = frozenset("""a an the and or but nor if then than so as of at by for from in into on onto to with without within over under
    per via is are was were be been being am do does did done has have had having it its it's this that these those there here
    which who whom whose what when where why how not no yes all any each every both either neither some such only own same
    other others more most less least much many few very can could may might must shall should will would just also too
    one you your we our they their them he she his her i me my up down out off again once about against between through
    during before after above below while because until""".split())


def _tokens(text: str) -> list[str]:
    """Lower-case words and numbers; a possessive's 's dropped ("the job's workers": the, job, workers)."""
    return re.findall(r"[a-z0-9]+", re.sub(r"['’]s\b", "", text.lower()))


def _content(word: str) -> bool:
    """A word that says something: not a stop word, and not a lone letter or digit ("P", "Q", "A", "2")."""
    return len(word) > 1 and word not in _STOPWORDS


def _grams(words: list[str], n: int = PHRASE_WORDS) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def key_options(question: Question, answer: Answer) -> list[int]:
    """The right options of a single- or all-that-apply question (none for numbers and orders)."""
    if question.type == "single":
        return [answer.correct]
    if question.type == "multiple":
        return sorted(answer.correct)
    return []


def key_is_longest(question: Question, answer: Answer) -> bool:
    """A single-choice key at least as long as every distractor (a tie counts against the key)."""
    return _key_is(question, answer, max)


def key_is_shortest(question: Question, answer: Answer) -> bool:
    """A single-choice key at most as long as every distractor (a tie counts against the key)."""
    return _key_is(question, answer, min)


def _key_is(question: Question, answer: Answer, extreme: Any) -> bool:
    if question.type != "single":
        return False
    lengths = [len(option) for option in question.options]
    return lengths[answer.correct] == extreme(lengths)


def chance_counts(probabilities: list[float]) -> list[float]:
    """P(X = c) for c = 0..n, X the number of successes of independent trials with these
    probabilities (a Poisson-binomial, computed exactly)."""
    distribution = [1.0]
    for p in probabilities:
        distribution = [(distribution[i] if i < len(distribution) else 0.0) * (1 - p) + (distribution[i - 1] * p if i else 0.0)
                        for i in range(len(distribution) + 1)]
    return distribution


def chance_bounds(probabilities: list[float], alpha: float = CUE_ALPHA) -> tuple[int, int]:
    """(low, high): the largest c with P(X < c) <= alpha and the smallest c with P(X > c) <= alpha;
    a count below low is too rare, above high too often, each at error rate alpha."""
    distribution = chance_counts(probabilities)
    below, low = 0.0, 0
    for count, mass in enumerate(distribution):
        if below + mass > alpha + 1e-12:
            low = count
            break
        below += mass
    above, high = 1.0, len(probabilities)
    for count, mass in enumerate(distribution):
        above -= mass  # now P(X > count)
        if above <= alpha + 1e-12:
            high = count
            break
    return low, high


@dataclass(frozen=True)
class LengthCount:
    """How often a set's (or a pool's) single-choice keys are their question's longest (or shortest) option."""

    extreme: str  # "longest" or "shortest"
    hits: tuple[str, ...]  # "question id" (a set) or "set id/question id" (a pool) of the keys that are
    singles: int
    low: int
    high: int

    @property
    def too_often(self) -> bool:
        return len(self.hits) > self.high

    @property
    def too_rarely(self) -> bool:
        return len(self.hits) < self.low

    def text(self) -> str:
        bound = f"at most {self.high}" if self.too_often else f"at least {self.low}"
        return (f"the right option is the {self.extreme} one in {len(self.hits)} of {self.singles} single-choice questions;"
                f" by chance it would be {bound} (one-sided {1 - CUE_ALPHA:.0%} bound)")


def length_count(sets: list[Quiz], extreme: str = "longest", *, prefix: bool = False) -> LengthCount:
    test = key_is_longest if extreme == "longest" else key_is_shortest
    hits, chances = [], []
    for quiz in sets:
        for question in quiz.questions:
            if question.type == "single":
                chances.append(1 / len(question.options))
                if test(question, quiz.key[question.id]):
                    hits.append(f"{quiz.id}/{question.id}" if prefix else question.id)
    return LengthCount(extreme, tuple(hits), len(chances), *chance_bounds(chances))


def _phrase_leaks(quiz: Quiz) -> list[str]:
    shown = {q.id: (_grams(_tokens(q.text)), [_grams(_tokens(o)) for o in q.options]) for q in quiz.questions}
    numbers = {q.id: set(re.findall(r"\d+(?:\.\d+)?", " ".join((q.text, *q.options)))) for q in quiz.questions}
    leaks = []
    for question in quiz.questions:
        answer = quiz.key[question.id]
        stem, options = shown[question.id]
        for index in key_options(question, answer):
            own = stem.union(*(grams for i, grams in enumerate(options) if i != index))
            distinctive = sorted(g for g in options[index] - own if sum(_content(w) for w in g) >= 2)
            for other in quiz.questions:
                if other.id == question.id:
                    continue
                other_stem, other_options = shown[other.id]
                true = range(len(other.options)) if other.type == "ordering" else key_options(other, quiz.key[other.id])
                for phrase in distinctive:
                    where = "its stem" if phrase in other_stem else next(
                        (f"its {'step' if other.type == 'ordering' else 'right option'} {other.options[i]!r}" for i in true if phrase in other_options[i]), "")
                    if where:
                        leaks.append(f"{question.id}'s key says {' '.join(phrase)!r}, and so does {other.id} ({where}): the answers file shows both,"
                                     " so one answers the other; reword one of them")
                        break
        if question.type == "numeric":
            value = f"{answer.correct:g}"
            if len(value.replace(".", "").replace("-", "").lstrip("0")) >= 3 and "e" not in value:
                for other in quiz.questions:
                    if other.id != question.id and value in numbers[other.id]:
                        leaks.append(f"{question.id}'s answer {value} is written in {other.id}: the answers file shows it; reword one of them")
    return leaks


def cue_problems(quiz: Quiz, pool: list[Quiz] | None = None, *, followups: bool = False) -> list[str]:
    """Where this set's key can be found without the knowledge (the rules above), in words."""
    problems = []
    what = "the bank's follow-up sets" if followups else "the bank's quizzes"
    for extreme, advice in (("longest", "make the distractors as long and as specific as the answer"),
                            ("shortest", "give the answer the specifics it needs, or trim a distractor")):
        own = length_count([quiz], extreme)
        if own.too_often:
            problems.append(f"{own.text()} ({', '.join(own.hits)}): a test-wise learner answers by length; {advice}")
        if pool is None or not own.singles:
            continue
        pooled = length_count([s for s in pool if s.id != quiz.id] + [quiz], extreme, prefix=True)
        if pooled.too_often and own.hits:
            problems.append(f"across {what}, {pooled.text()}; this set adds {', '.join(own.hits)}: a learner who meets them all"
                            f" learns to answer by length; {advice}")
        elif pooled.too_rarely:
            problems.append(f"across {what}, {pooled.text()} (this set: {len(own.hits)} of {own.singles}): a learner who meets them all"
                            f" learns to rule the {extreme} option out; let some answers be the {extreme} option")
    for question in quiz.questions:
        answer = quiz.key[question.id]
        right = key_options(question, answer)
        wrong = [len(o) for i, o in enumerate(question.options) if i not in right]
        if right and wrong and any(len(question.options[i]) >= max(KEY_RATIO * max(wrong), max(wrong) + KEY_RATIO_MIN_CHARS) for i in right):
            longest = max(len(question.options[i]) for i in right)
            problems.append(f"{question.id}: a right option is {longest} characters, the longest wrong one {max(wrong)}"
                            f" ({longest / max(wrong):.1f}x; {KEY_RATIO:g}x gives it away): make the distractors as long and as specific")
    problems += _phrase_leaks(quiz)
    return problems


_POOLS: dict[tuple[str, bool], tuple[tuple, list[Quiz]]] = {}


def pooled_sets(exercise: Exercise, followups: bool = False) -> list[Quiz]:
    """Every question set of this kind (quizzes, or follow-ups) in the exercise's bank that loads,
    cached while their files are unchanged."""
    folders = sorted(p.parent for p in (exercise.root / "exercises").glob("*/" + ("followups.toml" if followups else "quiz.toml")))
    siblings = [exercise._replace(id=folder.name) for folder in folders]
    stamp = tuple((s.id, *(path.stat().st_mtime_ns if path.is_file() else 0 for path in quiz_files(s, followups))) for s in siblings)
    cached = _POOLS.get((str(exercise.root), followups))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    sets = []
    for sibling in siblings:
        try:
            sets.append(load_quiz(sibling, followups))
        except MlprepError:
            continue  # its own self-check reports it
    _POOLS[(str(exercise.root), followups)] = (stamp, sets)
    return sets


def mark_text(quiz: Quiz, text: str) -> QuizOutcome:
    presentation, responses, _ = read_answers(quiz, text)
    return mark(quiz, presentation, responses)


def _main(argv: list[str]) -> int:
    import argparse

    from mlprep.bank import load_bank

    parser = argparse.ArgumentParser(prog="python -m mlprep.kinds.questions", description="Check a quiz (or a code exercise's follow-ups) and show it.")
    parser.add_argument("command", choices=("check",))
    parser.add_argument("ids", nargs="+")
    parser.add_argument("--followups", action="store_true", help="the exercise's interview follow-ups instead of a quiz")
    args = parser.parse_args(argv)
    bank, ok = load_bank(), True
    for exercise_id in args.ids:
        try:
            exercise = bank.get(exercise_id)
        except MlprepError as exc:
            print(f"{exercise_id}: {exc.message}")
            ok = False
            continue
        report = check_quiz(exercise, followups=args.followups)
        if report.key is not None:
            quiz = load_quiz(exercise, args.followups)
            print(answers_template(quiz, 1))
            for misconception, _, wrong in report.misconceptions:
                print(f"misconception {misconception.name}: wrong on {', '.join(wrong)}")
        for problem in report.problems:
            print(f"PROBLEM: {problem}")
        print(f"{exercise_id}: {'OK' if not report.problems else 'NOT OK'}\n")
        ok = ok and not report.problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
