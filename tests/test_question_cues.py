"""The self-check's test-taking rules (mlprep.kinds.questions.cue_problems): a key that can be found
without the knowledge, by its length or from another question, fails the set. Each rule is shown
failing a set built to break it (and passing its honest twin), and the bank's own quizzes and
follow-up sets are shown to pass them all."""

from __future__ import annotations

import pytest

from mlprep.bank import load_bank
from mlprep.kinds import questions as q


def single(qid: str, options: list[str], correct: int = 0, text: str = "") -> tuple[q.Question, q.Answer]:
    return q.Question(qid, "single", text or f"Which is right about {qid}?", tuple(options)), q.Answer(correct, "because")


def quiz(items: list[tuple[q.Question, q.Answer]], quiz_id: str = "set") -> q.Quiz:
    return q.Quiz(quiz_id, quiz_id, tuple(question for question, _ in items), {question.id: answer for question, answer in items}, ())


def lengths(qid: str, key: int, others: tuple[int, int, int]) -> tuple[q.Question, q.Answer]:
    """A single-choice question whose key has `key` characters and whose distractors have `others` (made of distinct words)."""
    words = [f"w{qid}{n}" for n in range(200)]

    def text(size: int, start: int) -> str:
        out = ""
        for word in words[start:]:
            out = (out + " " + word).strip()
            if len(out) >= size:
                return out[:size]
        raise AssertionError(size)

    return single(qid, [text(key, 0), *(text(size, 40 * (i + 1)) for i, size in enumerate(others))])


def test_the_chance_bounds_are_those_of_the_binomial() -> None:
    assert q.chance_bounds([0.25] * 3) == (0, 2)  # 3 of 3 happens by chance 1 time in 64: flagged; 2 of 3 (1 in 6.4) is not
    assert q.chance_bounds([0.25] * 2) == (0, 2)  # 2 of 2 (1 in 16) never fails a set alone: hence the pool
    assert q.chance_bounds([0.25] * 8) == (0, 4)
    assert q.chance_bounds([0.25] * 83) == (14, 27)  # about n/k = 21, give or take 1.65 standard deviations
    low, high = q.chance_bounds([0.25] * 83)
    counts = q.chance_counts([0.25] * 83)
    assert sum(counts[high + 1:]) <= q.CUE_ALPHA < sum(counts[high:])
    assert sum(counts[:low]) <= q.CUE_ALPHA < sum(counts[:low + 1])


def test_a_set_whose_key_is_the_longest_too_often_fails() -> None:
    cued = quiz([lengths(f"q{i}", 90, (60, 70, 80)) for i in range(6)])
    [problem] = [p for p in q.cue_problems(cued) if "longest" in p]
    assert problem.startswith("the right option is the longest one in 6 of 6 single-choice questions; by chance it would be at most 3")
    honest = quiz([lengths(f"q{i}", 90, (60, 95, 80)) for i in range(3)] + [lengths(f"r{i}", 90, (60, 70, 80)) for i in range(3)])
    assert q.cue_problems(honest) == []  # 3 of 6 is within chance


def test_a_set_whose_key_is_the_shortest_too_often_fails() -> None:
    trimmed = quiz([lengths(f"q{i}", 50, (60, 70, 80)) for i in range(4)])
    [problem] = q.cue_problems(trimmed)
    assert "the right option is the shortest one in 4 of 4" in problem and "by chance it would be at most 3" in problem


def test_small_sets_are_judged_in_their_pool() -> None:
    """Two-question follow-up sets can never fail alone; pooled, a length cue across them fails each set that feeds it."""
    sets = [quiz([lengths(f"a{n}", 90, (60, 70, 80)), lengths(f"b{n}", 90, (60, 70, 80))], f"set-{n}") for n in range(10)]
    assert all(q.cue_problems(s) == [] for s in sets)
    problems = q.cue_problems(sets[0], pool=sets, followups=True)
    assert any(p.startswith("across the bank's follow-up sets, the right option is the longest one in 20 of 20") and "this set adds a0, b0" in p
               for p in problems)
    # Never the longest and never the shortest is a cue too: the middle two options hold the key.
    middle = [quiz([lengths(f"a{n}", 75, (60, 70, 80)), lengths(f"b{n}", 75, (60, 70, 80))], f"set-{n}") for n in range(10)]
    problems = q.cue_problems(middle[0], pool=middle, followups=True)
    assert any("the right option is the longest one in 0 of 20" in p and "at least" in p and "rule the longest option out" in p for p in problems)
    assert any("the right option is the shortest one in 0 of 20" in p for p in problems)
    mixed = [quiz([lengths(f"a{n}", 90, (60, 70, 80)), lengths(f"b{n}", 50, (60, 70, 80)), lengths(f"c{n}", 75, (60, 70, 80)),
                   lengths(f"d{n}", 65, (60, 70, 80))], f"set-{n}") for n in range(5)]
    assert q.cue_problems(mixed[0], pool=mixed, followups=True) == []  # a quarter each: chance


def test_a_key_much_longer_than_every_distractor_fails() -> None:
    long_key = quiz([lengths("psi", 261, (55, 47, 55))])
    [problem] = q.cue_problems(long_key)
    assert problem.startswith("psi: a right option is 261 characters, the longest wrong one 55 (4.7x")
    assert q.cue_problems(quiz([lengths("psi", 80, (55, 47, 60))])) == []  # 1.33x
    # All that apply: one right option far longer than every wrong one.
    multiple = q.Question("which", "multiple", "Which apply?", ("short one", "a right option that goes on and on with every detail there is", "nope", "no"))
    [problem] = q.cue_problems(quiz([(multiple, q.Answer(frozenset({0, 1}), "x"))]))
    assert problem.startswith("which: a right option is 61 characters, the longest wrong one 4")
    # One-word options differ by their names alone: not a cue.
    names = q.Question("saturate", "multiple", "Which saturate?", ("sigmoid", "tanh", "ReLU", "GELU"))
    assert q.cue_problems(quiz([(names, q.Answer(frozenset({0, 1}), "x"))])) == []


def test_a_key_another_question_gives_away_fails() -> None:
    wont_help = single("wont-help", ["a higher learning rate", "skip connections", "ReLU activations", "batch normalization"])
    why = single("why-not", ["it scales every update", "it does cure it", "it only fails with Adam", "it explodes"],
                 text="Why doesn't a higher learning rate cure vanishing gradients?")
    [problem] = q.cue_problems(quiz([wont_help, why]))
    assert problem.startswith("wont-help's key says 'a higher learning rate', and so does why-not (its stem)")
    # In another question's right option, or in any step of an ordering, it gives it away too.
    repeat = single("repeat", ["use a higher learning rate schedule", "stop", "wait", "pray"])
    assert any("so does repeat (its right option" in p for p in q.cue_problems(quiz([wont_help, repeat])))
    order = q.Question("order", "ordering", "Order these.", ("first try a higher learning rate now", "then the rest"))
    assert any("so does order (its step" in p for p in q.cue_problems(quiz([wont_help, (order, q.Answer((0, 1), "x"))])))
    # As another question's distractor it gives nothing away (batch-norm and layer-norm axes offer each other's answer).
    other = single("other", ["skip it", "a higher learning rate helps here", "no", "yes"], correct=0)
    assert not [p for p in q.cue_problems(quiz([wont_help, other])) if "wont-help's key" in p]
    # A phrase of common words or lone letters is not distinctive ("KL(P||Q) is" in both).
    kl = single("kl", ["KL(P||Q) is infinite", "both are finite", "both are 0", "neither"])
    kl2 = single("kl2", ["KL(P||Q) is zero exactly when P = Q", "never", "always", "sometimes"])
    assert not [p for p in q.cue_problems(quiz([kl, kl2])) if "key says" in p]
    # A numeric key written in another question.
    accuracy = q.Question("accuracy", "numeric", "What accuracy does always-negative score, in %?")
    metric = single("metric", ["PR-AUC", "accuracy: anything above 99.3% is good", "loss", "MSE"])
    [problem] = q.cue_problems(quiz([(accuracy, q.Answer(99.3, "x")), metric]))
    assert problem.startswith("accuracy's answer 99.3 is written in metric")


BANK = load_bank()
SETS = [(e, False) for e in BANK.exercises if e.kind == "quiz"] + [(e, True) for e in BANK.exercises if q.has_followups(e)]


def test_the_rules_run_on_the_16_quizzes_and_every_code_exercises_follow_ups() -> None:
    from mlprep.kinds import kind_of

    assert sum(not f for _, f in SETS) == 16
    assert sorted(e.id for e, f in SETS if f) == sorted(e.id for e in BANK.exercises if kind_of(e).runs_code)


@pytest.mark.parametrize("exercise, followups", SETS, ids=[f"{e.id}{'-followups' if f else ''}" for e, f in SETS])
def test_every_question_set_of_the_bank_passes_the_rules(exercise, followups) -> None:
    quiz_ = q.load_quiz(exercise, followups)
    assert q.cue_problems(quiz_, pool=q.pooled_sets(exercise, followups), followups=followups) == []


@pytest.mark.parametrize("followups", [False, True], ids=["quizzes", "follow-ups"])
def test_across_the_bank_the_key_is_the_longest_option_about_as_often_as_chance(followups: bool) -> None:
    exercise = next(e for e, f in SETS if f == followups)
    pool = q.pooled_sets(exercise, followups)
    for extreme in ("longest", "shortest"):
        count = q.length_count(pool, extreme)
        assert count.low <= len(count.hits) <= count.high, (extreme, len(count.hits), count.singles)
    for quiz_ in pool:
        for question in quiz_.questions:
            right = q.key_options(question, quiz_.key[question.id])
            wrong = [len(o) for i, o in enumerate(question.options) if i not in right]
            if question.type == "single":
                assert len(question.options[right[0]]) < q.KEY_RATIO * max(wrong), (quiz_.id, question.id)
