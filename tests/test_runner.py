"""The engine against a tiny fixture bank: every way a submission can misbehave is a clear verdict."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from mlprep_process import processes_naming, wait_until

from mlprep.bank import load_bank
from mlprep.grading import engine
from mlprep.grading.engine import IMPORT_CHECK, grade_file
from mlprep.grading import Call

FIXTURES = Path(__file__).parent / "fixtures"
SUBMISSIONS = FIXTURES / "submissions"
HOSTILE = FIXTURES / "hostile"  # the misbehaving ones, shared with tests/test_hostile.py


@pytest.fixture(scope="module")
def add_exercise():
    return load_bank(FIXTURES / "runner_bank").get("add")


def grade(exercise, name, **kwargs):
    path = SUBMISSIONS / f"{name}.py"
    return grade_file(exercise, path if path.exists() else HOSTILE / f"{name}.py", **kwargs)


def flat(text):
    return " ".join(text.split())


def statuses(result):
    return {c.name: c.status for c in result.checks}


def test_correct_submission_passes(add_exercise):
    result = grade(add_exercise, "correct")
    assert result.status == "pass", result.message
    assert set(statuses(result).values()) == {"pass"}
    assert not result.internal_error


def test_wrong_answer_fails_with_expected_and_got(add_exercise):
    result = grade(add_exercise, "wrong")
    assert result.status == "fail"
    failed = result.checks[1]
    assert failed.status == "fail"
    assert "expected" in failed.message and "got" in failed.message and "index (0, 0)" in failed.message
    assert failed.details["mismatches"] == 12


def test_exception_is_an_error_naming_the_line(add_exercise):
    result = grade(add_exercise, "raises")
    assert result.status == "error"
    assert "ValueError: boom" in result.checks[1].message
    assert "line 2, in add" in result.checks[1].message


def test_a_hang_costs_one_time_limit_and_the_checks_that_would_call_it_again_are_not_run(add_exercise):
    result = grade(add_exercise, "infinite_loop", timeout_s=1)
    assert result.status == "timeout"
    first, *rest = result.checks[1:]
    assert (first.name, first.status) == ("adds float64 arrays", "timeout")
    assert "while running add()" in first.message and said_limit(first.message, result) >= 1
    assert flat(first.failing_input).startswith("add( np.array([[")  # the call that never came back
    assert [c.status for c in rest] == ["skip", "skip"]
    assert all("add() hit its time limit in the check 'adds float64 arrays'" in c.message for c in rest)
    assert first.duration_s < 3 and sum(c.duration_s for c in result.checks) < 4


def test_a_checks_limit_is_measured_from_the_reference(tmp_path, add_exercise, mlprep_home, monkeypatch):
    """With a generous grade limit, a call that never returns hits the check's own limit: 5 s plus 10x
    the reference's measured time for that check, which is cached in the data folder."""
    monkeypatch.setattr(engine, "_times", {})  # measured afresh, in this test's data folder
    monkeypatch.setattr(engine, "contention", lambda: 1.0)  # a quiet machine
    path = tmp_path / "slow.py"
    path.write_text("import time\n\ndef add(a, b):\n    time.sleep(60)\n    return a + b\n")
    result = grade_file(add_exercise, path, timeout_s=30)
    times = json.loads((mlprep_home / "cache" / "reference-times" / "add.json").read_text())["quiet_seconds"]
    assert set(times) == {"adds float64 arrays", "adds integers", "inputs unchanged"}
    first = result.checks[1]
    limit = engine.CHECK_FLOOR_S + engine.CHECK_HEADROOM * times["adds float64 arrays"]
    assert first.status == "timeout" and "5 s plus 10x the" in first.message and "the reference takes for this check" in first.message
    assert limit <= first.duration_s < limit + 1.0 < 30
    assert [c.status for c in result.checks[2:]] == ["skip", "skip"]


def test_a_wrong_answer_reports_its_input_as_python_that_reproduces_it(add_exercise):
    result = grade(add_exercise, "wrong")
    failed = result.checks[1]
    assert failed.status == "fail" and flat(failed.failing_input).startswith("add( np.array([[")
    wrong = lambda a, b: a - b  # what tests/fixtures/submissions/wrong.py computes
    a, b = eval(failed.failing_input.replace("add(", "(", 1), {"np": np})
    assert not np.allclose(wrong(a, b), a + b)
    assert failed.failing_input == str(Call("add", a, b))


def said_limit(message, result):
    """The whole grade's limit a message states: the one the grade ran under (the exercise's, scaled by the
    machine's load), recorded and said to a tenth of a second."""
    said = float(re.search(r"the time limit for the whole grade \(([\d.]+) s\)", message)[1])
    assert said == result.time_limit_s, (said, result.time_limit_s)
    return said


def two_function_bank(tmp_path, budget_s):
    """A bank with one exercise of two functions, f and g, whose checks say which one they use."""
    bank = tmp_path / "bank"
    (bank / "exercises" / "pair").mkdir(parents=True)
    (bank / "solutions" / "pair").mkdir(parents=True)
    (bank / "graders").mkdir()
    (bank / "exercises" / "pair" / "exercise.toml").write_text(
        f'format_version = 1\ntitle = "Pair"\nkind = "code"\ntopic = "testing"\ndifficulty = "easy"\nfunctions = ["f", "g"]\n'
        f'timeout_s = {budget_s}\nmemory_mb = 256\nhints = ["a", "b", "c"]\n')
    (bank / "exercises" / "pair" / "prompt.md").write_text("# Pair\n")
    (bank / "exercises" / "pair" / "stub.py").write_text("def f(x):\n    raise NotImplementedError\n\n\ndef g(x):\n    raise NotImplementedError\n")
    (bank / "solutions" / "pair" / "reference.py").write_text("def f(x):\n    return x + 1\n\n\ndef g(x):\n    return 2 * x\n")
    (bank / "graders" / "pair.py").write_text(
        "from mlprep.grading import assert_equal, check\n\n"
        "@check('f adds one', uses=('f',))\ndef f_check(sub, ctx):\n    assert_equal(sub.call('f', 1), 2, what='f(1)')\n\n"
        "@check('g doubles', uses=('g',))\ndef g_check(sub, ctx):\n    assert_equal(sub.call('g', 3), 6, what='g(3)')\n\n"
        "@check('f again', uses=('f',))\ndef f_again(sub, ctx):\n    assert_equal(sub.call('f', 5), 6, what='f(5)')\n")
    submission = tmp_path / "hangs_in_f.py"
    submission.write_text("def f(x):\n    while True:\n        pass\n\n\ndef g(x):\n    return 2 * x\n")
    return load_bank(bank).get("pair"), submission


def test_after_a_hang_the_checks_of_other_functions_still_run(tmp_path):
    exercise, submission = two_function_bank(tmp_path, budget_s=30)
    result = grade_file(exercise, submission)
    assert statuses(result) == {IMPORT_CHECK: "pass", "f adds one": "timeout", "g doubles": "pass", "f again": "skip"}
    assert "f() hit its time limit in the check 'f adds one'" in result.checks[-1].message


def test_when_the_grades_time_runs_out_the_remaining_checks_say_so(tmp_path):
    exercise, submission = two_function_bank(tmp_path, budget_s=1)
    result = grade_file(exercise, submission)
    assert statuses(result) == {IMPORT_CHECK: "pass", "f adds one": "timeout", "g doubles": "skip", "f again": "skip"}
    assert result.checks[2].message.endswith("ran out") and said_limit(result.checks[2].message, result) >= 1


def test_segfault_is_a_crash_and_later_checks_still_run(add_exercise):
    result = grade(add_exercise, "segfault")
    assert result.status == "error"
    assert all("SIGSEGV" in c.message for c in result.checks[1:])


def test_syntax_error_names_the_line_and_skips_the_rest(add_exercise):
    result = grade(add_exercise, "syntax_error")
    assert result.status == "error"
    assert result.checks[0].name == IMPORT_CHECK
    assert "does not parse" in result.checks[0].message and "line 1" in result.checks[0].message
    assert {c.status for c in result.checks[1:]} == {"skip"}


def test_os_exit_is_a_failed_verdict(add_exercise):
    result = grade(add_exercise, "os_exit")
    assert result.status == "error"
    assert "exited with code 0" in result.checks[1].message


def test_sys_exit_at_import(add_exercise):
    result = grade(add_exercise, "sys_exit_import")
    assert result.status == "error"
    assert "sys.exit(0)" in result.checks[0].message


def test_output_flood_fails_and_output_is_capped(add_exercise):
    result = grade(add_exercise, "flood")
    assert result.status == "fail"
    assert "MiB of output" in result.checks[1].message
    assert len(result.output) < 20_000


def test_input_mutation_is_caught_by_the_probe_only(add_exercise):
    result = grade(add_exercise, "mutates")
    assert statuses(result) == {IMPORT_CHECK: "pass", "adds float64 arrays": "pass", "adds integers": "pass", "inputs unchanged": "fail"}
    assert "modified its input a in place" in result.checks[-1].message


def test_returning_none_is_a_clean_fail(add_exercise):
    result = grade(add_exercise, "returns_none")
    assert result.status == "fail"
    assert not result.internal_error
    assert "got None" in result.checks[1].message


def test_missing_function_is_named(add_exercise):
    result = grade(add_exercise, "missing")
    assert result.status == "error"
    assert "does not define add" in result.checks[0].message


def test_memory_bomb_hits_the_cap(add_exercise):
    result = grade(add_exercise, "memory_bomb")
    assert result.status == "error"
    assert "memory" in result.checks[1].message.lower()


def test_monkeypatching_numpy_in_the_submission_cannot_pass(add_exercise):
    result = grade(add_exercise, "monkeypatch_numpy")
    assert result.status == "fail"
    assert "all checks passed" in result.output  # its fake claim is shown as output, nothing more


def test_a_broken_grader_is_an_internal_error_not_the_learners(tmp_path, add_exercise):
    import shutil

    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "runner_bank", bank)
    (bank / "graders" / "add.py").write_text(
        "from mlprep.grading import check\n\n@check('broken')\ndef broken(sub, ctx):\n    sub.call('add', 1, 2)\n    raise KeyError('grader bug')\n"
    )
    result = grade_file(load_bank(bank).get("add"), SUBMISSIONS / "correct.py")
    assert result.internal_error
    assert result.status == "error"
    assert "not your code" in result.message


@pytest.fixture(scope="module")
def softplus_exercise():
    return load_bank(FIXTURES / "runner_bank").get("softplus")


def test_cuda_scenarios_skip_without_a_gpu_and_never_pass_there(softplus_exercise):
    import torch

    result = grade_file(softplus_exercise, softplus_exercise.reference_path, device="auto")
    by_name = statuses(result)
    assert by_name["matches log(1 + exp(z)) at large |z|"] == "pass"
    assert by_name["matches log(1 + exp(z)) at large |z| [cuda]"] == ("pass" if torch.cuda.is_available() else "skip")
    assert result.status == "pass"


def test_device_option_selects_the_runs(softplus_exercise):
    from mlprep.grading.engine import collect_checks, cuda_available, load_module, plan_runs
    from mlprep.errors import MlprepError

    cpu_only = statuses(grade_file(softplus_exercise, softplus_exercise.reference_path, device="cpu"))
    assert not any("[cuda]" in name for name in cpu_only)
    planned = [name for name, *_ in plan_runs(collect_checks(load_module("grader_softplus_plan", softplus_exercise.grader_path)), "cuda")]
    assert "matches log(1 + exp(z)) at large |z|" not in planned
    assert "matches log(1 + exp(z)) at large |z| [cuda]" in planned
    assert "float64 gradient" in planned  # device-independent checks always run
    if not cuda_available():  # without a GPU, asking for cuda is a usage error, never a grade of what could run
        with pytest.raises(MlprepError, match="no GPU is visible here"):
            grade_file(softplus_exercise, softplus_exercise.reference_path, device="cuda")


def test_a_detached_output_fails_the_gradient_check_with_a_reason(tmp_path, softplus_exercise):
    path = tmp_path / "detached.py"
    path.write_text("import torch\n\ndef softplus(z):\n    return torch.nn.functional.softplus(z).detach()\n")
    result = grade_file(softplus_exercise, path, device="cpu")
    gradient = next(c for c in result.checks if c.name == "float64 gradient")
    assert gradient.status == "error"
    assert "not connected to its inputs" in gradient.message


def test_processes_left_running_fail_the_check_and_are_killed(add_exercise, tmp_path):
    submission = tmp_path / "leaves_child.py"
    shutil.copy(SUBMISSIONS / "leaves_child.py", submission)
    result = grade_file(add_exercise, submission)
    assert result.status == "error"
    left = [c for c in result.checks if re.search(r"left \d+ process\(es\) running", c.message)]
    assert len(left) == len(result.checks) - 1  # every check after the import
    wait_until(lambda: not processes_naming(submission), "the processes it left running are killed", timeout_s=5)



def one_exercise_bank(tmp_path, name, functions, reference, grader, timeout_s=30, memory_mb=256):
    """A bank of one code exercise `name`, its reference's and grader's sources given; returns (bank folder, exercise)."""
    bank = tmp_path / "bank"
    for folder in (f"exercises/{name}", f"solutions/{name}", "graders"):
        (bank / folder).mkdir(parents=True)
    (bank / f"exercises/{name}/exercise.toml").write_text(
        f'format_version = 1\ntitle = "{name.title()}"\nkind = "code"\ntopic = "testing"\ndifficulty = "easy"\nfunctions = {list(functions)!r}\n'
        f'timeout_s = {timeout_s}\nmemory_mb = {memory_mb}\nhints = ["a", "b", "c"]\n')
    (bank / f"exercises/{name}/prompt.md").write_text(f"# {name.title()}\n")
    (bank / f"exercises/{name}/stub.py").write_text("".join(f"def {fn}(*args):\n    raise NotImplementedError\n\n\n" for fn in functions))
    (bank / f"solutions/{name}/reference.py").write_text(reference)
    (bank / f"graders/{name}.py").write_text(grader)
    return bank, load_bank(bank).get(name)


def test_a_floating_point_warning_fails_a_check_that_runs_under_errstate(tmp_path):
    """`sub.errstate(...)` runs the learner's call under np.errstate in the sandbox: the naive sigmoid's
    overflow warning fails that check (naming the setting, the input shown inside the same with-block),
    while the check that allows warnings passes the same code."""
    bank, exercise = one_exercise_bank(
        tmp_path, "sig", ["sigmoid"],
        "import numpy as np\n\ndef sigmoid(z):\n    e = np.exp(-np.abs(z))\n    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))\n",
        "import numpy as np\nfrom mlprep.grading import assert_close, check\n\n"
        "@check('warnings allowed')\ndef loose(sub, ctx):\n    z = np.array([-1000.0, 0.0])\n"
        "    assert_close(sub.call('sigmoid', z), ctx.reference.sigmoid(z), what='sigmoid(z)')\n\n"
        "@check('no floating-point warning')\ndef strict(sub, ctx):\n    z = np.array([-1000.0, 0.0])\n"
        "    with sub.errstate(over='raise', divide='raise'):\n"
        "        assert_close(sub.call('sigmoid', z), ctx.reference.sigmoid(z), what='sigmoid(z)')\n")
    naive = tmp_path / "naive.py"
    naive.write_text("import numpy as np\n\ndef sigmoid(z):\n    return 1 / (1 + np.exp(-z))\n")
    result = grade_file(exercise, naive)
    assert statuses(result) == {IMPORT_CHECK: "pass", "warnings allowed": "pass", "no floating-point warning": "fail"}
    strict = result.checks[-1]
    assert "NumPy raised a floating-point warning (overflow encountered in exp)" in strict.message
    assert 'np.errstate(over="raise", divide="raise")' in strict.message and "line 4, in sigmoid" in strict.message
    assert strict.failing_input == ('with np.errstate(over="raise", divide="raise"):\n'
                                    "    result = sigmoid(np.array([-1000.0, 0.0]))\nresult")
    assert grade_file(exercise, bank / "solutions/sig/reference.py").status == "pass"


def test_torch_running_out_of_memory_is_reported_as_memory(tmp_path):
    """torch raises RuntimeError ("DefaultCPUAllocator: can't allocate memory"), not MemoryError: the
    verdict still says the code ran out of the exercise's memory."""
    exercise = load_bank(FIXTURES / "runner_bank").get("softplus")
    greedy = tmp_path / "greedy.py"
    greedy.write_text("import torch\n\ndef softplus(z):\n    torch.empty(2**40, dtype=torch.uint8)\n    return z\n")
    result = grade_file(exercise, greedy, device="cpu")
    failed = result.checks[1]
    assert failed.status == "error" and failed.details["kind"] == "memory", failed.message
    assert "your code ran out of memory" in failed.message and f"the {exercise.memory_mb} MiB of memory this exercise allows" in failed.message


GROWTH_GRADER = '''
import numpy as np
from mlprep.grading import check, growth_check, measure_peak_memory


def timed_rank(module, n, calls):
    for seed in range(calls):
        module.rank(np.random.default_rng(seed).random(n))


def peak_table(module, n):
    with measure_peak_memory("cpu") as peak:
        module.table(n)
    return peak.bytes


@check("time grows like the reference's", uses=("rank",))
def time_growth(sub, ctx):
    # 10 calls a run at the small size: a millisecond or more, not a round trip (what a busy machine moves most).
    growth_check(sub, ctx, timed_rank, (1000, 10), (100_000, 1), sizes=(1000, 100_000), size_format="{:,} values", calls=(10, 1),
                 max_growth=5, what="rank(x)")


@check("memory grows like the reference's", uses=("table",))
def memory_growth(sub, ctx):
    growth_check(sub, ctx, peak_table, (1000,), (4000,), sizes=(1000, 4000), measure="memory", max_growth=2, what="table(n)")
'''


def test_a_growth_check_tells_a_quadratic_cost_from_a_linear_one(tmp_path):
    """growth_check against the reference's growth in the same run: time (a sort against a comparison of every
    pair, 100x the values) and peak memory measured outside Python's allocator (n x 1000 against n x n float64
    tables, 4x the rows). No absolute timing is asserted: only the verdicts, which a busy machine does not move."""
    linear = "import numpy as np\n\ndef rank(x):\n    return np.argsort(np.argsort(x))\n\ndef table(n):\n    return np.ones((n, 1000))\n"
    bank, exercise = one_exercise_bank(tmp_path, "grow", ["rank", "table"], linear, GROWTH_GRADER, memory_mb=512)
    quadratic = tmp_path / "quadratic.py"
    quadratic.write_text("import numpy as np\n\ndef rank(x):\n    return np.array([(x < v).sum() for v in x])\n\n"
                         "def table(n):\n    return np.ones((n, n))\n")
    passed = grade_file(exercise, bank / "solutions/grow/reference.py")
    assert passed.status == "pass", passed.message
    failed = grade_file(exercise, quadratic)
    assert statuses(failed) == {IMPORT_CHECK: "pass", "time grows like the reference's": "fail", "memory grows like the reference's": "fail"}
    timed, memory = failed.checks[1:]
    # Measured to the end, or stopped once past the bound (on a busy machine): the same verdict, in words that say which.
    assert "rank(x): your code's time grew" in timed.message or "rank(x): your code's run at 100,000 values was stopped after" in timed.message
    assert "1,000 values" in timed.message and "100,000 values" in timed.message
    assert "a quadratic one about 10,000x" in timed.message and "Allowed: 5x the reference's growth" in timed.message
    assert timed.details["got"] == "its time's growth from 1,000 values to 100,000 values is more than 5x the reference's"
    assert timed.failing_input == "timed_rank(<your module>, 100000, 1)  # the grader's scenario timed_rank (grow)"
    assert "table(n): your code's peak memory grew" in memory.message and "a quadratic one about 16x" in memory.message
    # The peak resident set sees NumPy's tables exactly: 128 MB / 8 MB against 32 MB / 8 MB.
    assert 14 < memory.details["learner_growth"] < 18 and 3.5 < memory.details["reference_growth"] < 4.5


COST_GRADER = '''
import os
import time

from mlprep.grading import check, fail
from mlprep.grading._runner import SubmissionTimeout


def sleep_here(module, seconds):
    time.sleep(seconds)


def work_in_a_child(module, seconds):
    pid = os.fork()
    if pid == 0:
        start = time.process_time()
        while time.process_time() - start < seconds:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def spin(module):
    while True:
        pass


@check("costs", uses=("f",))
def costs(sub, ctx):
    measured = {}
    for name, scenario in (("sleep", sleep_here), ("child", work_in_a_child)):
        sub._run(scenario, (0.3,), {}, timed=True)
        measured[name] = [sub.last_elapsed_s, sub.last_cost_s]
    measured["cpu"] = sub.times_cpu()
    try:
        sub._run(spin, (), {}, timed=True, cpu_cutoff_s=0.2)
    except SubmissionTimeout as stopped:
        measured["spin"] = [stopped.details, sub.remaining_s()]
    fail("measured", measured=measured)
'''


def test_a_timed_run_costs_its_processs_cpu_time_and_work_in_a_child_process_costs_wall_time(tmp_path):
    """A busy machine moves wall time, and moves a long run's more than a short one's, so timed runs cost the CPU
    seconds of the learner's process, read by the judge from its CPU clock: a sleep costs next to nothing, and a
    run past its CPU-time cut-off is stopped there, long before the check's time limit. Work moved into a child
    process (0.3 s of CPU time here, waited for) would escape that clock, so such a run costs its wall time instead."""
    bank, exercise = one_exercise_bank(tmp_path, "costs", ["f"], "def f():\n    return 1\n", COST_GRADER, timeout_s=60, memory_mb=512)
    result = grade_file(exercise, bank / "solutions/costs/reference.py", timeout_s=60)
    measured = result.checks[-1].details["measured"]
    assert measured["cpu"] is True, "this Linux lets the judge read a sandbox's CPU clock"
    elapsed, cost = measured["sleep"]
    assert elapsed >= 0.3 and cost < 0.1, measured
    elapsed, cost = measured["child"]
    assert elapsed >= 0.3 and cost == elapsed, measured
    details, remaining_s = measured["spin"]
    assert details == {"cpu_limit_reached": True} and remaining_s > 0, measured


def test_an_edge_check_quotes_the_prompt_and_the_grade_says_the_algorithm_is_right(tmp_path):
    bank = tmp_path / "bank"
    shutil.copytree(FIXTURES / "runner_bank", bank)
    grader = bank / "graders" / "add.py"
    grader.write_text(grader.read_text().replace('@check("adds integers")', '@check("adds integers", edge="Integers add exactly.")'))
    submission = tmp_path / "floats_only.py"
    submission.write_text("import numpy as np\n\ndef add(a, b):\n    return np.add(a, b, dtype=np.float64) + (0.5 if a.dtype.kind == 'i' else 0.0)\n")
    result = grade_file(load_bank(bank).get("add"), submission)
    assert statuses(result) == {IMPORT_CHECK: "pass", "adds float64 arrays": "pass", "adds integers": "fail", "inputs unchanged": "pass"}
    assert result.checks[2].message.endswith("(An edge case the contract settles: Integers add exactly.)")
    assert result.message.startswith("the algorithm is right: its checks pass; 1 of the 1 edge cases of the contract fail")


def test_a_syntax_error_is_found_before_any_sandbox_starts_and_reads_as_the_sandbox_says_it(add_exercise, monkeypatch):
    through_the_sandbox = (lambda: (monkeypatch.setattr(engine, "does_not_parse", lambda path: None), grade(add_exercise, "syntax_error"))[1])()
    monkeypatch.undo()

    def no_sandbox(*args, **kwargs):
        raise AssertionError("a sandbox was started for a file that does not parse")

    monkeypatch.setattr(engine, "prestart", no_sandbox)
    monkeypatch.setattr(engine, "Sandbox", no_sandbox)
    early = grade(add_exercise, "syntax_error")
    assert [(c.name, c.status, c.message, c.details) for c in early.checks] == [(c.name, c.status, c.message, c.details) for c in through_the_sandbox.checks]
    assert early.message == through_the_sandbox.message and early.status == "error"


def test_the_sandbox_gets_a_graders_scenarios_and_what_they_use_never_its_checks():
    from mlprep.grading._files import scenario_source

    source = '''from mlprep.grading import check
LIMIT = 3
UNUSED = 4


def expected(x):
    return x + 1


def helper(x):
    return min(x, LIMIT)


def drive(module, x):
    return module.f(helper(x))


drive.repro = lambda interface, x: f"f({x})"


@check("f adds one")
def adds_one(sub, ctx):
    assert sub.run(drive, 1) == expected(1)
'''
    kept = {getattr(node, "name", None) or getattr(getattr(node, "targets", [None])[0], "id", None) for node in scenario_source(source).body}
    assert {"drive", "helper", "LIMIT"} <= kept and not {"expected", "adds_one", "UNUSED"} & kept
    assert "drive.repro" in __import__("ast").unparse(scenario_source(source))


def test_a_busier_machine_scales_every_limit(tmp_path, add_exercise, mlprep_home, monkeypatch):
    """Three times busier than a quiet machine: each check's limit, and the exercise's, are three times theirs."""
    assert 1.0 <= engine.contention() <= engine.MAX_LOAD
    monkeypatch.setattr(engine, "_times", {})  # measured afresh, in this test's data folder
    path = tmp_path / "slow.py"
    path.write_text("import time\n\ndef add(a, b):\n    time.sleep(60)\n    return a + b\n")
    monkeypatch.setattr(engine, "contention", lambda: 3.0)
    correct = grade_file(add_exercise, SUBMISSIONS / "correct.py")  # the reference's times measured, divided by the load then, and cached
    assert correct.time_limit_s == 3.0 * add_exercise.timeout_s
    result = grade_file(add_exercise, path, timeout_s=40)
    quiet = json.loads((mlprep_home / "cache" / "reference-times" / "add.json").read_text())["quiet_seconds"]["adds float64 arrays"]
    first = result.checks[1]
    limit = 3.0 * (engine.CHECK_FLOOR_S + engine.CHECK_HEADROOM * quiet)
    assert first.status == "timeout" and "times 3: the machine is that much busier than a quiet one now" in first.message
    assert limit <= first.duration_s < limit + 1.0
