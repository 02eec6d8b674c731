"""Asking a question set's questions in the terminal, one by one (a quiz, a code exercise's follow-ups,
a missed question under review)."""

from __future__ import annotations

from typing import Any

from mlprep.kinds.questions import Presentation, Question, Quiz, parse_response
from mlprep.screen.keys import Keys


class QuizAborted(Exception):
    """The learner left the quiz (q or Ctrl-D at a question): nothing is graded."""


class Asker:
    """Asks questions one by one in the terminal: a single key picks a single-choice option, keys
    toggle the options of an all-that-apply question (Enter confirms), and numbers and orderings are
    typed and confirmed with Enter (Backspace edits). stdin that is not a terminal (a pipe) works the
    same, its characters read as keys. Uses the practice loop's key reader (cbreak mode, restored on
    every way out)."""

    def __init__(self, stdin: Any, out: Any):
        self.keys = Keys(stdin)
        self.stream = stdin  # read directly when it has no file descriptor (an in-memory stream)
        self.out = out  # a rich Console
        self._pending = ""

    def __enter__(self) -> Asker:
        self.keys.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.keys.__exit__(*exc_info)

    def _key(self) -> str:
        while not self._pending:
            if self.keys.fd is None:
                self._pending = self.stream.read(1) if self.stream is not None else ""
                if not self._pending:
                    raise QuizAborted("stdin closed")
                break
            if self.keys.closed:
                raise QuizAborted("stdin closed")
            self._pending = self.keys.read(0.2)
        key, self._pending = self._pending[0], self._pending[1:]
        if key == "\x04":  # Ctrl-D
            raise QuizAborted("Ctrl-D")
        return key

    def _write(self, text: str, style: str = "") -> None:
        from rich.text import Text

        self.out.print(Text(text, style=style), end="")
        self.out.file.flush()

    def _status(self, text: str) -> None:
        """Redraw the status line in place (on a terminal; elsewhere, a new line), cut to the width so
        that it never wraps: a wrapped line could not be redrawn."""
        width = max(self.out.width - 1, 8)
        shown = text if len(text) <= width else text[:width - 1] + "…"
        if self.out.is_terminal:
            self.out.file.write("\r\x1b[2K")
        else:
            self.out.print()
        self._write(shown)

    def ask(self, question: Question, presentation: Presentation, number: int, total: int) -> Any:
        from rich.text import Text

        self.out.print(Text(f"\nQ{number}/{total}. ", style="bold").append(question.text, style="bold"))
        letters = [presentation.letter(question.id, i) for i in presentation.options.get(question.id, ())]
        for letter, option in zip(letters, (question.options[i] for i in presentation.options.get(question.id, ()))):
            self.out.print(Text(f"  {letter}) ", style="bold cyan").append(option))
        if question.type == "single":
            self._write(f"your answer ({letters[0]}-{letters[-1]}; q quits): ", "dim")
            while True:
                key = self._key().lower()
                if key in letters:
                    self.out.print(Text(key, style="bold"))
                    return presentation.option(question.id, key)
                if key == "q":
                    raise QuizAborted("q")
        if question.type == "multiple":
            chosen: list[str] = []
            self._write("toggle the letters that apply, Enter when done (q quits): ", "dim")
            while True:
                key = self._key().lower()
                if key in letters:
                    chosen = [c for c in chosen if c != key] if key in chosen else sorted([*chosen, key])
                    self._status(f"selected: {', '.join(chosen) or '(none)'}  (Enter when done) ")
                elif key in "\r\n" and chosen:
                    self.out.print()
                    return frozenset(presentation.option(question.id, c) for c in chosen)
                elif key == "q":
                    raise QuizAborted("q")
        prompt = "a number" + (f" ({question.unit})" if question.unit else "") if question.type == "numeric" else "all the letters, first to last"
        while True:
            self._write(f"your answer, {prompt}, then Enter (an empty line quits): ", "dim")
            typed = ""
            while True:
                key = self._key()
                if key in "\r\n":
                    self.out.print()
                    break
                if key in "\x7f\b":
                    if typed:
                        typed = typed[:-1]
                        self._write("\b \b")
                elif key.isprintable():
                    typed += key
                    self._write(key)
            if not typed.strip():
                raise QuizAborted("empty")
            response, problem = parse_response(question, presentation, typed)
            if response is not None:
                return response
            self.out.print(Text(problem or "that is not an answer", style="yellow"))


def ask_questions(quiz: Quiz, presentation: Presentation, stdin: Any, out: Any, only: list[str] | None = None) -> dict[str, Any]:
    """The learner's responses to the quiz's questions (or `only` these), in the presentation's order."""
    ids = [q for q in presentation.questions if only is None or q in only]
    with Asker(stdin, out) as asker:
        return {question_id: asker.ask(quiz.question(question_id), presentation, number, len(ids)) for number, question_id in enumerate(ids, start=1)}
