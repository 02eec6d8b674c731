"""Grading results, modelled on pytest's TestReport and exercism's results.json.

"fail" is a wrong answer; "error" is the learner's code raising, crashing or not importing;
"timeout" is it running past the limit; "skip" is a scenario that could not run here (CUDA without
a GPU) and never counts as a pass of that scenario.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

CHECK_STATUSES = ("pass", "fail", "error", "timeout", "skip")
GRADE_STATUSES = ("pass", "fail", "error", "timeout")


@dataclass
class CheckResult:
    name: str
    status: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CheckResult":
        return cls(data["name"], data["status"], data.get("message", ""), dict(data.get("details") or {}), float(data.get("duration_s", 0.0)))


@dataclass
class GradeResult:
    id: str
    status: str
    message: str
    checks: list[CheckResult]
    output: str = ""  # the head of what the learner's code printed
    device: str = "cpu"
    duration_s: float = 0.0
    internal_error: bool = False  # a defect in mlprep or the grader, not the learner's fault

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status in ("fail", "error", "timeout")]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GradeResult":
        return cls(
            id=data["id"],
            status=data["status"],
            message=data.get("message", ""),
            checks=[CheckResult.from_dict(c) for c in data.get("checks", [])],
            output=data.get("output", ""),
            device=data.get("device", "cpu"),
            duration_s=float(data.get("duration_s", 0.0)),
            internal_error=bool(data.get("internal_error", False)),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False, default=str)


def overall_status(checks: list[CheckResult]) -> str:
    """pass when every check passed or was skipped; otherwise the worst status seen."""
    statuses = {c.status for c in checks}
    for worst in ("error", "timeout", "fail"):
        if worst in statuses:
            return worst
    if "pass" not in statuses:
        return "fail"  # nothing actually ran: all skipped is not a pass
    return "pass"


def summary_message(checks: list[CheckResult]) -> str:
    bad = [c for c in checks if c.status in ("fail", "error", "timeout")]
    ran = [c for c in checks if c.status != "skip"]
    skipped = len(checks) - len(ran)
    tail = f" ({skipped} skipped)" if skipped else ""
    if not bad:
        return f"all {len(ran)} checks passed{tail}"
    return f"{len(bad)} of {len(ran)} checks did not pass{tail}; first: {bad[0].name}: {bad[0].message.splitlines()[0] if bad[0].message else bad[0].status}"


def to_junit(results: list[GradeResult]) -> str:
    """JUnit XML: one testsuite per exercise, one testcase per check (fail -> failure, error/timeout -> error)."""
    from xml.etree import ElementTree as ET  # only for --junit

    suites = ET.Element("testsuites")
    for result in results:
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=result.id,
            tests=str(len(result.checks)),
            failures=str(sum(c.status == "fail" for c in result.checks)),
            errors=str(sum(c.status in ("error", "timeout") for c in result.checks)),
            skipped=str(sum(c.status == "skip" for c in result.checks)),
            time=f"{result.duration_s:.3f}",
        )
        for check in result.checks:
            case = ET.SubElement(suite, "testcase", classname=result.id, name=check.name, time=f"{check.duration_s:.3f}")
            text = check.message + ("\n" + json.dumps(check.details, default=str) if check.details else "")
            if check.status == "fail":
                ET.SubElement(case, "failure", message=check.message.splitlines()[0] if check.message else "").text = text
            elif check.status in ("error", "timeout"):
                ET.SubElement(case, "error", message=check.status + (": " + check.message.splitlines()[0] if check.message else ""), type=check.status).text = text
            elif check.status == "skip":
                ET.SubElement(case, "skipped", message=check.message)
    return ET.tostring(suites, encoding="unicode")
