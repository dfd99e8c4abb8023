"""What CI systems see of a gate decision: JUnit XML and a GitHub step summary.

The JUnit suite is named `judge-calibration`, one test case per criterion: FAIL is a failure,
INCONCLUSIVE an error, so a dashboard shows "the judge is miscalibrated" apart from "the app
failed".
"""

from __future__ import annotations

import os
from pathlib import Path
from xml.etree import ElementTree as ET

from judgekit.errors import InputError
from judgekit.gate.result import GateResult
from judgekit.inputs.files import write_atomic
from judgekit.report.render import md_escape
from judgekit.secrets import redact_known


def to_junit(result: GateResult) -> str:
    failures = sum(d.status == "FAIL" for d in result.decisions)
    errors = sum(d.status == "INCONCLUSIVE" for d in result.decisions)
    suite = ET.Element(
        "testsuite",
        name="judge-calibration",
        tests=str(len(result.decisions)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
    )
    for d in result.decisions:
        case = ET.SubElement(suite, "testcase", classname="judge-calibration", name=d.criterion)
        if d.status == "FAIL":
            ET.SubElement(
                case,
                "failure",
                message=f"judge miscalibrated: {d.summary}",
                type="JudgeMiscalibrated",
            ).text = "\n".join(d.reasons)
        elif d.status == "INCONCLUSIVE":
            ET.SubElement(
                case,
                "error",
                message=f"calibration inconclusive: {d.summary}",
                type="CalibrationInconclusive",
            ).text = "\n".join(d.reasons)
        else:
            ET.SubElement(case, "system-out").text = d.summary
    suites = ET.Element("testsuites")
    suites.append(suite)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(result: GateResult, path: Path) -> None:
    write_atomic(path, to_junit(result))


def to_summary(result: GateResult) -> str:
    icon = {"PASS": "✅", "FAIL": "❌", "INCONCLUSIVE": "⚠️"}
    lines = [
        f"### Judge calibration gate: {icon[result.status]} {result.status}",
        "",
        "| criterion | decision | reason |",
        "|---|---|---|",
    ]
    lines += [
        f"| {md_escape(d.criterion)} | {icon[d.status]} {d.status} | {md_escape(d.summary, 500)} |"
        for d in result.decisions
    ]
    return "\n".join(lines) + "\n\n"


def append_step_summary(result: GateResult) -> None:
    """Append to $GITHUB_STEP_SUMMARY when it is set (GitHub Actions); do nothing otherwise."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        try:
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(redact_known(to_summary(result)))
        except OSError as error:
            raise InputError.one(
                target, "GITHUB_STEP_SUMMARY", f"cannot be appended to ({error.strerror or error})"
            ) from None
