"""Series a failure carries (mlprep.grading.Series) and their pictures (mlprep.screen.charts): from a
grader's failure through a real grade into the check's details as plain JSON data, and drawn as
sparklines that fit the terminal."""

from __future__ import annotations

import dataclasses
import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from mlprep.bank import load_bank
from mlprep.screen.charts import BLOCKS, series_text
from mlprep.grading.diagnosis import fingerprint
from mlprep.grading.engine import grade_file
from mlprep.grading import MAX_SERIES_POINTS, CheckFailed, Series, assert_close, fail, series_on_failure
from mlprep.results import CheckResult, GradeResult

REPO = Path(__file__).resolve().parents[1]


def drawn(series: Series | dict, width: int) -> list[str]:
    """The picture's lines as a terminal of `width` columns prints them (no line may wrap)."""
    data = series.as_details() if isinstance(series, Series) else series
    text = series_text(data, width)
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(text)
    printed = console.file.getvalue().rstrip("\n").split("\n")  # type: ignore[attr-defined]
    assert printed == text.plain.split("\n"), "a line wrapped"
    assert all(len(line) <= width for line in printed), printed
    return printed


def sparkline(lines: list[str], name: str) -> str:
    row = next(line for line in lines if line.strip().startswith(name + " "))
    return row.strip()[len(name):].strip(" ")


# ---------------------------------------------------------------------------------------------
# Through a real grade
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def no_backoff_grade(tmp_path_factory: pytest.TempPathFactory) -> GradeResult:
    """loss-scaling graded on its bug that never lowers the scale: its training runs fail with a trajectory."""
    exercise = load_bank(REPO).get("loss-scaling")
    bug = next(b for b in exercise.bugs() if b.name == "no_backoff")
    path = tmp_path_factory.mktemp("charts") / "loss_scaling_no_backoff.py"
    path.write_text(bug.apply(exercise.reference_path.read_text()))
    with pytest.MonkeyPatch.context() as patch:  # this module-scoped grade gets its own data folder too
        patch.setenv("MLPREP_HOME", str(tmp_path_factory.mktemp("charts-home")))
        return grade_file(exercise, path, device="cpu")


def test_a_training_run_that_fails_carries_its_scale_per_step_into_the_details_as_json(no_backoff_grade: GradeResult) -> None:
    check = next(c for c in no_backoff_grade.checks if c.name == "a float16 model backs off until its steps succeed")
    assert check.status == "fail"
    series = check.details["series"]
    assert series["title"] == "loss scale after each step" and series["x_label"] == "step" and series["log_scale"] is True
    # No step ever backs off: the scale stays at init_scale, while GradScaler's rule halves it on the first three overflows.
    assert series["lines"]["yours"] == [2.0**16] * 9
    assert series["lines"]["expected"][:4] == [2.0**16, 2.0**15, 2.0**14, 2.0**13]
    assert series["x"] == list(range(9))
    # Plain JSON data, through --json and back.
    again = GradeResult.from_dict(json.loads(no_backoff_grade.to_json()))
    assert next(c for c in again.checks if c.name == check.name).details["series"] == series
    lines = drawn(series, 80)
    assert lines[0] == "  loss scale after each step: 8192 to 65536, log scale; step 0 to 8"
    assert sparkline(lines, "yours") == "█" * 9
    assert lines[-1].index("^") == lines[1].index("█") + 1  # under step 1, the first that backs off
    assert "step 1: yours 65536, expected 32768" in lines[-1]


def test_every_trajectory_failure_of_the_grade_draws_within_60_columns(no_backoff_grade: GradeResult) -> None:
    pictured = [c for c in no_backoff_grade.checks if c.status == "fail" and "series" in c.details]
    assert {c.name for c in pictured} >= {"scale sequence matches torch.amp.GradScaler", "scale never falls below min_scale",
                                         "a skipped step leaves parameters and Adam's state untouched",
                                         "50 steps with random overflows match torch.amp.GradScaler"}
    for check in pictured:
        assert "^" in drawn(check.details["series"], 60)[-1]


def test_the_diagnosis_fingerprint_ignores_the_series(no_backoff_grade: GradeResult) -> None:
    without = dataclasses.replace(no_backoff_grade, checks=[
        CheckResult(c.name, c.status, c.message, {k: v for k, v in c.details.items() if k != "series"}, c.duration_s, c.failing_input)
        for c in no_backoff_grade.checks])
    assert fingerprint(without) == fingerprint(no_backoff_grade)


# ---------------------------------------------------------------------------------------------
# The toolkit: attaching a series to a failure
# ---------------------------------------------------------------------------------------------
def test_fail_and_series_on_failure_put_the_series_in_the_details() -> None:
    picture = Series("loss", {"yours": [1.0, math.inf, math.nan], "expected": [1.0, 0.5, 0.25]}, x_label="epoch")
    with pytest.raises(CheckFailed) as raised:
        fail("diverged", series=picture, epoch=2)
    assert raised.value.details == {"epoch": 2, "series": {"title": "loss", "x_label": "epoch", "log_scale": False, "x": [0, 1, 2],
                                                           "lines": {"yours": [1.0, "inf", "NaN"], "expected": [1.0, 0.5, 0.25]}}}
    assert json.dumps(raised.value.details, allow_nan=False)

    with pytest.raises(CheckFailed) as raised:  # a toolkit assertion inside the block
        with series_on_failure(lambda: picture):
            assert_close(2.0, 1.0, what="loss")
    assert raised.value.details["series"]["title"] == "loss" and raised.value.details["what"] == "loss"

    with pytest.raises(CheckFailed) as raised:  # a failure's own series is kept
        with series_on_failure(lambda: picture):
            fail("own", series=Series("own", {"yours": [1]}))
    assert raised.value.details["series"]["title"] == "own"

    with pytest.raises(CheckFailed) as raised:  # nothing to draw
        with series_on_failure(lambda: None):
            fail("no picture")
    assert "series" not in raised.value.details


def test_a_long_series_is_downsampled_to_the_bound_keeping_the_first_difference_and_the_last_point() -> None:
    n = 5000
    yours = [1.0] * n
    expected = [1.0] * 1234 + [2.0] * (n - 1234)
    data = Series("scale", {"yours": yours, "expected": expected}, x_label="update", x=range(1, n + 1)).as_details()
    assert len(data["x"]) == MAX_SERIES_POINTS
    assert all(len(points) == MAX_SERIES_POINTS for points in data["lines"].values())
    assert data["x"][0] == 1 and data["x"][-1] == n and 1235 in data["x"]
    assert data["x"] == sorted(data["x"])
    assert data["note"] == "downsampled from 5000 to 100 points, the first difference (update 1235) kept"
    # The details keep every point (longer lists are cut), and the picture marks the same first difference.
    assert CheckResult("c", "fail", "m", {"series": data}).details["series"] == data
    lines = drawn(data, 60)
    assert "^ update 1235: yours 1, expected 2" in lines[-1] or "update 1235: yours 1, expected 2 ^" in lines[-1]


def test_lines_of_different_lengths_and_points_that_are_no_numbers() -> None:
    data = Series("s", {"yours": [1, 2, "oops"], "expected": [1, 2, 3, 4]}).as_details()
    assert data["lines"] == {"yours": [1, 2, None, None], "expected": [1, 2, 3, 4]}
    lines = drawn(data, 60)
    assert "step 2: yours no point, expected 3" in lines[-1]


# ---------------------------------------------------------------------------------------------
# The picture
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [60, 80, 120])
def test_both_lines_are_drawn_point_by_point_within_the_width_and_the_first_difference_is_marked(width: int) -> None:
    yours = [8.0, 8.0, 8.0, 4.0, 4.0, 2.0]
    expected = [8.0, 8.0, 8.0, 8.0, 4.0, 4.0]
    lines = drawn(Series("loss scale per step", {"yours": yours, "expected": expected}), width)
    assert lines[0] == "  loss scale per step: 2 to 8; step 0 to 5"
    assert len(sparkline(lines, "yours")) == len(sparkline(lines, "expected")) == 6
    assert sparkline(lines, "yours") == "███▃▃▁" and sparkline(lines, "expected") == "████▃▃"
    first_column = lines[1].index("█")
    assert lines[3].index("^") == first_column + 3
    assert lines[3].endswith("^ step 3: yours 4, expected 8")


def test_a_difference_near_the_right_edge_puts_its_label_left_of_the_caret() -> None:
    yours = [1.0] * 45 + [2.0]
    lines = drawn(Series("s", {"yours": yours, "expected": [1.0] * 46}), 60)
    assert lines[-1].endswith("step 45: yours 2, expected 1 ^")


def test_a_series_wider_than_the_terminal_is_drawn_in_columns_that_still_show_the_first_difference() -> None:
    yours = [float(i) for i in range(100)]
    expected = [*yours[:77], *(v + 50 for v in yours[77:])]
    lines = drawn(Series("s", {"yours": yours, "expected": expected}), 60)
    assert len(sparkline(lines, "yours")) == 60 - len("  expected  ")
    assert "step 77: yours 77, expected 127" in lines[-1]


def test_inf_and_nan_points_have_glyphs_of_their_own_and_a_legend() -> None:
    lines = drawn(Series("loss", {"yours": [1.0, 2.0, math.inf, math.nan, -math.inf], "expected": [1.0, 2.0, 3.0, 4.0, 5.0]}), 60)
    assert sparkline(lines, "yours") == "▁▃!?!"
    assert "step 2: yours inf, expected 3" in lines[-2]
    assert lines[-1] == "  ! inf  ? NaN"
    assert lines[0] == "  loss: 1 to 5; step 0 to 4"


def test_a_constant_series_sits_mid_height_and_nothing_is_marked() -> None:
    lines = drawn(Series("variance per layer", {"yours": [0.5] * 7, "expected": [0.5] * 7}, x_label="layer"), 60)
    assert lines[0] == "  variance per layer: 0.5; layer 0 to 6"
    assert sparkline(lines, "yours") == sparkline(lines, "expected") == BLOCKS[3] * 7
    assert len(lines) == 3  # no marker line


def test_a_log_scale_spaces_powers_evenly_and_draws_zero_apart() -> None:
    powers = [2.0**k for k in range(8)]
    assert sparkline(drawn(Series("s", {"yours": powers}, log_scale=True), 60), "yours") == BLOCKS
    assert sparkline(drawn(Series("s", {"yours": powers}), 60), "yours") == "▁▁▁▁▂▃▄█"
    lines = drawn(Series("scale", {"yours": [4.0, 2.0, 1.0, 0.0], "expected": [4.0, 2.0, 1.0, 1.0]}, log_scale=True, x_label="update"), 60)
    assert lines[0] == "  scale: 1 to 4, log scale; update 0 to 3"
    assert sparkline(lines, "yours") == "█▅▁_"
    assert lines[-1] == "  _ zero or below"


def test_a_long_title_gives_its_ranges_a_line_of_their_own() -> None:
    title = "distance of the parameters from where they started, in the L2 norm, after each step"
    lines = drawn(Series(title, {"yours": [0.0, 1.0], "expected": [0.0, 2.0]}), 60)
    assert lines[0] == "  " + title[:57] + "…"
    assert lines[1] == "  0 to 2; step 0 to 1"


@pytest.mark.parametrize("malformed", [None, "series", {}, {"lines": []}, {"lines": {"yours": []}}])
def test_a_malformed_series_draws_nothing(malformed: object) -> None:
    assert series_text(malformed, 80).plain == ""
