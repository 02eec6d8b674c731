"""Grading results, modelled on pytest's TestReport and exercism's results.json.

"fail" is a wrong answer; "error" is the learner's code raising, crashing or not importing;
"timeout" is it running past the limit; "skip" is a scenario that could not run here (CUDA without
a GPU, or checks not run after a timeout) and never counts as a pass of that scenario.

Everything in a result is plain JSON data from the moment it is built: what a learner's code sends
back (NaN, infinities, huge arrays, bytes that are not UTF-8, lone surrogates) is turned into
strings and numbers JSON can carry (RFC 8259: no bare NaN), so --json, --junit, the progress store
and the interview report never fail on the values they carry.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

CHECK_STATUSES = ("pass", "fail", "error", "timeout", "skip")
GRADE_STATUSES = ("pass", "fail", "error", "timeout")

MAX_DETAIL_ITEMS = 100  # a list in details longer than this is cut (with a note): details are for reading
MAX_TEXT_CHARS = 20_000  # per message or detail string


def cut_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` cut to `limit` characters, the cut said at its end; `is_cut` tells such a text."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def is_cut(text: str) -> bool:
    return re.search(r"… \(\d+ more characters\)$", text) is not None


def clean_text(text: Any) -> str:
    """A str that encodes to UTF-8: bytes decoded with replacement, lone surrogates replaced."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    elif not isinstance(text, str):
        text = str(text)
    return cut_text(text).encode("utf-8", errors="replace").decode("utf-8")


def jsonable(value: Any, depth: int = 0) -> Any:
    """`value` as plain JSON data: non-finite floats as the strings "NaN", "inf", "-inf"; NumPy and
    torch values as numbers or (cut) lists; anything else as its text."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else ("NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
    if isinstance(value, (str, bytes, bytearray)):
        return clean_text(value)
    if depth > 20:
        return clean_text(repr(value)[:200])
    if isinstance(value, dict):
        return {clean_text(k): jsonable(v, depth + 1) for k, v in list(value.items())[:MAX_DETAIL_ITEMS]}
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # NumPy arrays and scalars, torch tensors
        try:
            size = math.prod(value.shape)
            values = value.reshape(-1)[:MAX_DETAIL_ITEMS].tolist() if size > MAX_DETAIL_ITEMS else value.tolist()
        except Exception:  # noqa: BLE001 - whatever it is, its text will do
            return clean_text(repr(value)[:200])
        cut = jsonable(values, depth + 1)
        return cut + [f"… {size - MAX_DETAIL_ITEMS} more"] if size > MAX_DETAIL_ITEMS else cut
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        cut = [jsonable(v, depth + 1) for v in items[:MAX_DETAIL_ITEMS]]
        if len(items) > MAX_DETAIL_ITEMS:
            cut.append(f"… {len(items) - MAX_DETAIL_ITEMS} more")
        return cut
    return clean_text(str(value))


@dataclass
class CheckResult:
    """One check's verdict (pass, fail, error, timeout or skip), its message, details and duration."""
    name: str
    status: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    # The smallest input found that makes this check fail, as Python a learner can paste (in full
    # when it is small), or a description of it; "" when there is none to show.
    failing_input: str = ""
    # The prompt's sentence that settles the edge case this check judges; "" for a check of the algorithm itself.
    edge: str = ""
    # Not a field (never stored or serialised): the failing input as the Call object itself, values
    # included, in the process that graded (repro scripts pickle the values too large to write out).
    failing_call = None

    def __post_init__(self) -> None:
        self.name, self.message, self.failing_input, self.edge = (clean_text(self.name), clean_text(self.message), clean_text(self.failing_input),
                                                                   clean_text(self.edge))
        self.details = jsonable(dict(self.details or {}))
        self.duration_s = float(self.duration_s) if math.isfinite(float(self.duration_s)) else 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CheckResult":
        return cls(data["name"], data["status"], data.get("message", ""), dict(data.get("details") or {}), float(data.get("duration_s", 0.0)),
                   data.get("failing_input", ""), data.get("edge", ""))


@dataclass
class GradeResult:
    """A whole grade: the overall status and message, each check's result, and what the code printed."""
    id: str
    status: str
    message: str
    checks: list[CheckResult]
    output: str = ""  # the head of what the learner's code printed
    device: str = "cpu"
    duration_s: float = 0.0
    internal_error: bool = False  # a defect in mlprep or the grader, not the learner's fault
    time_limit_s: float = 0.0  # the grade's time limit as it ran (the exercise's, scaled by the machine's load then); 0: none

    def __post_init__(self) -> None:
        self.message, self.output = clean_text(self.message), clean_text(self.output)

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
            time_limit_s=float(data.get("time_limit_s", 0.0)),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)


def overall_status(checks: list[CheckResult]) -> str:
    """pass when every check passed, or was skipped for a device this machine lacks; otherwise the worst
    status seen. A check not run because the grade's time ran out makes it a timeout: a pass must mean
    every check ran."""
    statuses = {c.status for c in checks}
    for worst in ("error", "timeout", "fail"):
        if worst in statuses:
            return worst
    if any(c.status == "skip" and not c.details.get("unavailable") for c in checks):
        return "timeout"
    if "pass" not in statuses:
        return "fail"  # nothing actually ran: all skipped is not a pass
    return "pass"


def summary_message(checks: list[CheckResult]) -> str:
    """"all 12 checks passed", "1 of 12 checks did not pass, 10 not run; first: ...": out of the checks this machine can run."""
    bad = [c for c in checks if c.status in ("fail", "error", "timeout")]
    unavailable = [c for c in checks if c.status == "skip" and c.details.get("unavailable")]
    not_run = [c for c in checks if c.status == "skip" and not c.details.get("unavailable")]
    counted = len(checks) - len(unavailable)
    devices = sorted({str(c.details["unavailable"]).upper() for c in unavailable})
    tail = f" ({len(unavailable)} {'/'.join(devices)} scenario{'' if len(unavailable) == 1 else 's'} skipped: not on this machine)" if unavailable else ""
    if not bad and not not_run:
        return f"all {counted} checks passed{tail}"
    if not bad:
        return f"{len(not_run)} of {counted} checks not run{tail}; first: {not_run[0].name}: {not_run[0].message}"
    not_run_text = f", {len(not_run)} not run" if not_run else ""
    first = f"; first: {bad[0].name}: {bad[0].message.splitlines()[0] if bad[0].message else bad[0].status}"
    if all(c.edge for c in bad) and any(c.status == "pass" and not c.edge for c in checks):
        edges = sum(bool(c.edge) for c in checks if c not in unavailable)
        return f"the algorithm is right: its checks pass; {len(bad)} of the {edges} edge cases of the contract fail{not_run_text}{tail}{first}"
    return f"{len(bad)} of {counted} checks did not pass{not_run_text}{tail}{first}"


# Characters XML 1.0 cannot carry at all, even escaped (most C0 controls, lone surrogates, U+FFFE/F).
NOT_XML = "[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def _xml_text(text: str) -> str:
    """Text XML can hold: each forbidden character written out as \\xNN (what the learner printed stays readable).
    The pattern is compiled here, not at import (re caches it): compiling its ranges costs a few milliseconds,
    and every command imports this module."""
    return re.sub(NOT_XML, lambda m: f"\\x{ord(m.group()):02x}", text)


def to_junit(results: list[GradeResult], names: list[str] | None = None) -> str:
    """JUnit XML: one testsuite per result (named `names[i]`, else the exercise id: one per file of a
    batch), one testcase per check (fail -> failure, error/timeout -> error)."""
    from xml.etree import ElementTree as ET  # only for --junit

    def element(parent: Any, tag: str, **attributes: str) -> Any:
        return ET.SubElement(parent, tag, {key: _xml_text(value) for key, value in attributes.items()})

    suites = ET.Element("testsuites")
    for number, result in enumerate(results):
        suite = element(
            suites,
            "testsuite",
            name=names[number] if names else result.id,
            tests=str(len(result.checks)),
            failures=str(sum(c.status == "fail" for c in result.checks)),
            errors=str(sum(c.status in ("error", "timeout") for c in result.checks)),
            skipped=str(sum(c.status == "skip" for c in result.checks)),
            time=f"{result.duration_s:.3f}",
        )
        for check in result.checks:
            case = element(suite, "testcase", classname=result.id, name=check.name, time=f"{check.duration_s:.3f}")
            text = check.message + (f"\nsmallest failing input: {check.failing_input}" if check.failing_input else "")
            text += "\n" + json.dumps(check.details, allow_nan=False) if check.details else ""
            if check.status == "fail":
                element(case, "failure", message=check.message.splitlines()[0] if check.message else "").text = _xml_text(text)
            elif check.status in ("error", "timeout"):
                element(case, "error", message=check.status + (": " + check.message.splitlines()[0] if check.message else ""), type=check.status).text = _xml_text(text)
            elif check.status == "skip":
                element(case, "skipped", message=check.message)
        if result.output:
            element(suite, "system-out").text = _xml_text(result.output)
    return ET.tostring(suites, encoding="unicode")
