import json
from xml.etree import ElementTree as ET

from mlprep.results import CheckResult, GradeResult, overall_status, to_junit


def sample():
    return GradeResult(
        id="adamw", status="fail", message="1 of 2 checks did not pass",
        checks=[CheckResult("a", "pass", "", {}, 0.1), CheckResult("b", "fail", "w differs", {"max_abs_err": 0.5, "first_index": "(0, 1)"}, 0.2),
                CheckResult("c [cuda]", "skip", "no GPU")],
        output="hello", device="auto", duration_s=1.5,
    )


def test_json_round_trip_keeps_every_field():
    result = sample()
    again = GradeResult.from_dict(json.loads(result.to_json()))
    assert again == result
    data = json.loads(result.to_json())
    assert set(data) >= {"id", "status", "message", "checks"}
    assert set(data["checks"][0]) >= {"name", "status", "message", "details", "duration_s"}


def test_overall_status_is_the_worst_and_skips_never_pass_alone():
    c = lambda s: CheckResult("x", s)  # noqa: E731
    assert overall_status([c("pass"), c("skip")]) == "pass"
    assert overall_status([c("pass"), c("fail"), c("timeout")]) == "timeout"
    assert overall_status([c("fail"), c("error")]) == "error"
    assert overall_status([c("skip")]) == "fail"


def test_junit_has_one_case_per_check():
    root = ET.fromstring(to_junit([sample()]))
    suite = root.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    assert [case.get("name") for case in suite.findall("testcase")] == ["a", "b", "c [cuda]"]
    assert suite.findall("testcase")[1].find("failure").get("message") == "w differs"
