"""The `debug` kind: the stub is a runnable, working-looking program with bugs planted in it; the learner
fixes it. Graded like code, by behaviour (a loss below a bound, one batch overfit), never by its text.

Its self-check is code's, and more: the stub must be exactly the reference with every bug marked
`planted = true` in bugs.toml (applied in its order), so that each bug the learner has to find is also
graded alone, on the fixed program, and known to be caught; and the stub's grade may be diagnosed as
the planted bugs it holds.
"""

from __future__ import annotations


from mlprep.bank import Bug, Exercise
from mlprep.errors import MlprepError
from mlprep.kinds.code import CodeKind


class DebugKind(CodeKind):
    name = "debug"

    def stub_may_match(self, bug: Bug) -> bool:
        return bug.planted

    def planted_problems(self, exercise: Exercise, bugs: list[Bug]) -> list[str]:
        if not any(bug.planted for bug in bugs):
            return ["a debug exercise needs planted bugs (planted = true in bugs.toml): the bugs its stub holds"]
        try:
            expected = exercise.planted_source()
        except MlprepError as exc:
            return [f"the planted bugs do not apply one after another to the reference: {exc.message}"]
        if expected != exercise.stub():
            import difflib  # only when the stub is not what it must be

            diff = difflib.unified_diff(expected.splitlines(), exercise.stub().splitlines(), "reference + planted bugs", "stub.py", n=0, lineterm="")
            first = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))][:4]
            return ["stub.py is not the reference with its planted bugs (bugs.toml planted = true); first differences: " + " | ".join(first)]
        return []
