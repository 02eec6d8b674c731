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
    no_gpu = CheckResult("x [cuda]", "skip", details={"unavailable": "cuda"})
    assert overall_status([c("pass"), no_gpu]) == "pass"
    assert overall_status([c("pass"), c("skip")]) == "timeout"  # a check not run is no pass
    assert overall_status([c("pass"), c("fail"), c("timeout")]) == "timeout"
    assert overall_status([c("fail"), c("error")]) == "error"
    assert overall_status([no_gpu]) == "fail"


def test_junit_has_one_case_per_check():
    root = ET.fromstring(to_junit([sample()]))
    suite = root.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    assert [case.get("name") for case in suite.findall("testcase")] == ["a", "b", "c [cuda]"]
    assert suite.findall("testcase")[1].find("failure").get("message") == "w differs"


def strict_json(text):
    """json.loads that refuses NaN and Infinity, which RFC 8259 does not allow."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def test_results_carry_any_value_as_valid_json():
    import numpy as np
    import torch

    details = {"got": float("nan"), "expected": float("inf"), "low": -np.inf, "array": np.arange(1_000_000.0), "tensor": torch.tensor([np.nan, 1.0]),
               "raw": b"\xff\xfe not UTF-8", "lone": "\udcff", 3: {"nested": (np.float32(np.nan),)}}
    result = GradeResult("focal-loss", "fail", "loss: got nan \udc80", [CheckResult("c", "fail", "got NaN", details, float("nan"), "f(\udcff)")],
                         output="printed \udcfe and \x00")
    data = strict_json(result.to_json())
    check = data["checks"][0]
    assert check["details"]["got"] == "NaN" and check["details"]["expected"] == "inf" and check["details"]["low"] == "-inf"
    assert len(check["details"]["array"]) == 101 and check["details"]["array"][-1] == "… 999900 more"
    assert check["details"]["tensor"] == ["NaN", 1.0] and check["details"]["3"] == {"nested": ["NaN"]}
    assert check["details"]["raw"].endswith("not UTF-8") and check["duration_s"] == 0.0
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # every string encodes: no lone surrogates left
    assert GradeResult.from_dict(data).checks[0].failing_input == "f(?)"


def test_junit_is_well_formed_xml_whatever_the_learner_printed():
    result = GradeResult("add", "fail", "m", [CheckResult("c", "error", "raised \x1b[2J boom \x00", {"got": float("nan")}, 0.1, "add(1, 2)")],
                         output="\x1b[31mfake PASS\x07\x00")
    root = ET.fromstring(to_junit([result]))
    error = root.find("testsuite/testcase/error")
    assert "\\x1b[2J boom \\x00" in error.text and "smallest failing input: add(1, 2)" in error.text and '"got": "NaN"' in error.text
    assert root.find("testsuite/system-out").text == "\\x1b[31mfake PASS\\x07\\x00"


def test_a_grade_whose_only_failures_are_edges_says_the_algorithm_is_right():
    from mlprep.results import summary_message

    algorithm = CheckResult("matches the reference", "pass")
    empty = CheckResult("an empty list raises ValueError", "fail", "expected ValueError", edge="An empty list raises ValueError.")
    named = CheckResult("the adapters are named A and B", "pass", edge="The adapters are A and B.")
    assert summary_message([algorithm, empty, named]).startswith("the algorithm is right: its checks pass; 1 of the 2 edge cases of the contract fail")
    wrong = CheckResult("matches the reference", "fail", "values differ")
    assert summary_message([wrong, empty, named]).startswith("2 of 3 checks did not pass")
    assert CheckResult.from_dict(empty.__dict__ | {"details": {}}).edge == "An empty list raises ValueError."


def test_a_grade_counts_every_check_and_a_check_not_run_for_lack_of_time_is_no_pass():
    from mlprep.results import overall_status, summary_message

    hung = [CheckResult("imports", "pass"), CheckResult("f adds one", "timeout", "no answer")] + [
        CheckResult(f"check {i}", "skip", "not run: f() hit its time limit") for i in range(10)]
    assert summary_message(hung).startswith("1 of 12 checks did not pass, 10 not run; first: f adds one")
    cuda = [CheckResult("matches", "pass"), CheckResult("matches [cuda]", "skip", "CUDA is not available", {"unavailable": "cuda"})]
    assert overall_status(cuda) == "pass" and summary_message(cuda) == "all 1 checks passed (1 CUDA scenario skipped: not on this machine)"
    out_of_time = [CheckResult("slow but right", "pass"), CheckResult("never ran", "skip", "not run: the time limit for the whole grade (20 s) ran out",
                                                                      {"grade_limit_s": 20})]
    assert overall_status(out_of_time) == "timeout"
    assert summary_message(out_of_time).startswith("1 of 2 checks not run; first: never ran: not run: the time limit")
