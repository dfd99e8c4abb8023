"""The gate over reports made by the real pipeline (recorded verdicts), for every outcome and
every fail-closed cause."""

import json
from datetime import UTC, datetime, timedelta
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.cli.ci import to_junit
from judgekit.errors import InputError
from judgekit.gate import Gate, JudgeNotCalibrated, require_calibrated
from judgekit.inputs.policy import Policy, Thresholds
from judgekit.pipeline import Options, measure

runner = CliRunner()


def make(project, n_pass, n_fail, verdict, criterion_id="c", **criterion):
    """A project whose judge's verdict on example (i, label) is verdict(i, label); returns
    its report."""
    project.criterion({"id": criterion_id, "question": "Does it hold?", **criterion})
    examples = [{"id": f"p{i}", "output": f"good {i}", "passed": True} for i in range(n_pass)]
    examples += [{"id": f"f{i}", "output": f"bad {i}", "passed": False} for i in range(n_fail)]
    project.jsonl(criterion_id, examples)
    lines = [
        json.dumps({"id": e["id"], "passed": verdict(i, e["passed"]), "criterion": criterion_id})
        for i, e in enumerate(examples)
    ]
    path = project.root / f"{criterion_id}.verdicts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = measure(
        Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            verdicts=path,
            criterion_ids=[criterion_id],
        )
    )
    report.write(project.root / ".judgekit" / "reports" / "latest")
    return report


def decide(project, report, **thresholds):
    gate = Gate.from_project(project.criteria, project.sets)
    if thresholds:
        gate.policy = Policy(defaults=Thresholds(**thresholds))
    return gate.check(report)


def good(i, label):
    return label


def test_good_judge_passes(project):
    result = decide(project, make(project, 40, 40, good))
    assert result.status == "PASS" and result.exit_code == 0
    assert "TPR 1.00, TNR 1.00" in result.decisions[0].summary
    assert result.raise_for_status() is result


@pytest.mark.parametrize(
    "name, n_pass, n_fail, verdict, status, words",
    [
        ("5 labelled examples", 3, 2, good, "INCONCLUSIVE", "too few labelled examples"),
        ("one class only", 40, 0, good, "FAIL", "TNR is undefined"),
        ("a constant judge", 40, 40, lambda i, label: True, "FAIL", "TNR 0.00"),
        (
            "kappa 0.10",
            50,
            50,
            lambda i, label: label if i % 20 < 11 else not label,
            "FAIL",
            "below 0.80",
        ),
        (
            "30% unparseable",
            40,
            40,
            lambda i, label: None if i % 10 < 3 else label,
            "FAIL",
            "abstained on 24 of 80",
        ),
        (
            "interval straddles",
            30,
            30,
            lambda i, label: label if i % 30 < 26 else not label,
            "INCONCLUSIVE",
            "straddles 0.80",
        ),
    ],
)
def test_defaults_fail_closed(project, name, n_pass, n_fail, verdict, status, words):
    report = make(project, n_pass, n_fail, verdict)
    result = decide(project, report)
    assert result.status == status, (name, result.lines())
    assert words in result.decisions[0].summary
    assert result.exit_code in (1, 3)
    with pytest.raises(JudgeNotCalibrated, match=words):
        result.raise_for_status()


def test_kappa_010_is_what_the_case_claims(project):
    report = make(project, 50, 50, lambda i, label: label if i % 20 < 11 else not label)
    assert report.criteria[0].metrics["cohen_kappa"] == pytest.approx(0.10)


def test_inconclusive_says_how_many_more_examples(project):
    result = decide(
        project, make(project, 30, 30, lambda i, label: label if i % 30 < 26 else not label)
    )
    d = result.decisions[0]
    assert d.needed and d.needed["pass"] > 0 and "more known-good examples" in d.summary


def test_changed_prompt_or_set_or_model_is_stale(project):
    report = make(project, 40, 40, good)
    project.criterion({"id": "c", "question": "Does it hold, really?"})
    assert "criterion's judge" in decide(project, report).decisions[0].summary
    make(project, 40, 40, good)
    report = json.loads((project.root / ".judgekit/reports/latest/report.json").read_text())
    project.jsonl("c", [{"id": "p0", "output": "changed", "passed": True}])
    from judgekit.report import Report

    result = decide(project, Report.model_validate(report))
    assert result.status == "FAIL" and "calibration set changed" in result.decisions[0].summary
    # A judge.model that differs from the model the report calibrated is stale too.
    make(project, 40, 40, good)
    project.criterion(
        {"id": "c", "question": "Does it hold?", "judge": {"model": "openai/new-judge"}}
    )
    stale = decide(project, Report.read(project.root / ".judgekit/reports/latest"))
    assert (
        stale.status == "FAIL" and "recorded verdicts without --model" in stale.decisions[0].summary
    )
    named = measure(
        Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            model="openai/new-judge",
            verdicts=project.root / "c.verdicts.jsonl",
        )
    )
    assert decide(project, named).status == "PASS"
    assert (
        decide(
            project,
            named.model_copy(
                update={
                    "criteria": [
                        named.criteria[0].model_copy(
                            update={
                                "judge": named.criteria[0].judge.model_copy(
                                    update={"model": "openai/old-judge"}
                                )
                            }
                        )
                    ]
                }
            ),
        ).status
        == "FAIL"
    )


def test_old_evidence_is_stale(project):
    """max_age counts from the oldest answer the figures rest on: verdicts given 45 days ago are
    old evidence however recently they were read in."""
    make(project, 40, 40, good)
    then = (datetime.now(UTC) - timedelta(days=45)).isoformat()
    path = project.root / "c.verdicts.jsonl"
    path.write_text(
        "".join(
            json.dumps({**json.loads(line), "at": then}) + "\n"
            for line in path.read_text().splitlines()
        )
    )
    old = measure(Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=path))
    result = decide(project, old)
    assert result.status == "FAIL" and "older than max_age 30d" in result.decisions[0].summary
    assert "45 days old" in result.decisions[0].summary
    assert decide(project, old, max_age=None).status == "PASS"


def test_missing_report_and_missing_criterion_block(project):
    make(project, 40, 40, good)
    assert Gate.from_project(project.criteria, project.sets).check(None).status == "FAIL"
    project.criterion({"id": "d", "question": "Other?"})
    project.jsonl("d", [{"id": "x", "output": "y", "passed": True}])
    from judgekit.report import Report

    result = Gate.from_project(project.criteria, project.sets).check(
        Report.read(project.root / ".judgekit/reports/latest")
    )
    assert (
        result.decision("d").status == "FAIL"
        and "no calibration report" in result.decision("d").summary
    )
    assert result.blocked(["nope"])[0].status == "FAIL"


def test_flip_rate_and_point_thresholds(project):
    make(project, 40, 40, good)
    path = project.root / "c.verdicts.jsonl"
    # Three trials; on 24 of the 80 examples (30%) the third trial says the opposite.
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text(
        "".join(
            json.dumps(
                {
                    **r,
                    "trial": t,
                    "passed": r["passed"] if t < 2 or i % 10 >= 3 else not r["passed"],
                }
            )
            + "\n"
            for i, r in enumerate(records)
            for t in range(3)
        )
    )
    flippy = measure(Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=path))
    assert flippy.criteria[0].consistency.flip_rate == 0.3
    assert "trials disagreed on 30%" in decide(project, flippy).decisions[0].summary
    constant = make(project, 40, 40, lambda i, label: True)
    # no switch lets a bad judge through
    assert decide(project, constant, use_lower_bound=False).status == "FAIL"


def test_policy_from_pyproject_and_yaml(project):
    (project.root / "pyproject.toml").write_text(
        "[tool.judgekit.gate]\nmin_tpr = 0.9\nmax_age = '7d'\n"
        "[tool.judgekit.gate.criteria.c]\nmin_tnr = 0.5\n"
    )
    policy = Policy.load(root=project.root)
    assert policy.for_criterion("c").min_tnr == 0.5 and policy.for_criterion("c").min_tpr == 0.9
    assert policy.for_criterion("other").min_tnr == 0.8
    (project.root / "judgekit.yaml").write_text(
        "gate:\n  min_tpr: 2\n  criteria: {c: {max_age: soon}}\n"
    )
    with pytest.raises(InputError) as caught:
        Policy.load(root=project.root)
    assert "judgekit.yaml:gate.min_tpr" in str(caught.value) and "gate.max_age" not in str(
        caught.value
    )
    (project.root / "judgekit.yaml").write_text("gate:\n  min_tpr: 0.9\n  mni_tnr: 0.5\n")
    with pytest.raises(InputError, match=r"judgekit.yaml:gate.mni_tnr: unknown key"):
        Policy.load(root=project.root)


def test_a_section_written_twice_in_judgekit_yaml_is_refused(project):
    (project.root / "judgekit.yaml").write_text(
        "gate:\n  min_tpr: 0.9\n  min_tnr: 0.9\ndrift:\n  alpha: 0.05\ngate:\n  max_age: 30d\n"
    )
    with pytest.raises(InputError) as caught:
        Policy.load(root=project.root)
    [problem] = caught.value.problems
    assert problem.location == "line 6" and "key 'gate' twice (first at line 1)" in problem.message


def test_cli_exit_codes_and_junit(project, tmp_path):
    make(project, 40, 40, good, criterion_id="good")
    make(project, 40, 40, lambda i, label: True, criterion_id="constant")
    # One report holding both criteria.
    both = measure(
        Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=_merge(project))
    )
    both.write(project.root / ".judgekit" / "reports" / "latest")
    ok = runner.invoke(app, ["gate", "-c", "good"])
    assert ok.exit_code == 0 and "PASS         good" in ok.output
    bad = runner.invoke(app, ["gate", "--junit", str(tmp_path / "j.xml")])
    assert bad.exit_code == 1 and "FAIL         constant: TNR 0.00" in bad.output
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.get("name") == "judge-calibration" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["constant"].find("failure") is not None and cases["good"].find("failure") is None
    missing = runner.invoke(app, ["gate", "--report", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "no report" in missing.output


def _merge(project):
    path = project.root / "all.jsonl"
    path.write_text("".join(p.read_text() for p in sorted(project.root.glob("*.verdicts.jsonl"))))
    return path


def test_inconclusive_exit_3_junit_error_and_step_summary(project, tmp_path, monkeypatch):
    make(project, 3, 2, good)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = runner.invoke(app, ["gate", "--junit", str(tmp_path / "j.xml")])
    assert result.exit_code == 3
    assert ET.parse(tmp_path / "j.xml").getroot().find("testsuite/testcase/error") is not None
    assert "INCONCLUSIVE" in summary.read_text() and "| c |" in summary.read_text()


def test_calibrate_with_gate_uses_the_gate_exit_code(project):
    make(project, 40, 40, lambda i, label: True)
    result = runner.invoke(
        app, ["calibrate", "--verdicts", str(project.root / "c.verdicts.jsonl"), "--gate"]
    )
    assert result.exit_code == 1 and "gate: FAIL" in result.output


def test_require_calibrated(project):
    make(project, 40, 40, good)
    # Another tool's verdicts: the gate passes them, but a suite behind this guard
    # grades with judgekit's judge.
    with pytest.raises(
        JudgeNotCalibrated, match="calibrated from recorded verdicts of another judge"
    ):
        require_calibrated("c")
    assert require_calibrated("c", recorded=True).passed
    make(project, 40, 40, lambda i, label: False)
    with pytest.raises(JudgeNotCalibrated, match="TPR 0.00"):
        require_calibrated(recorded=True)


def test_junit_escapes_reasons():
    from judgekit.gate import Decision, GateResult

    xml = to_junit(GateResult((Decision("a<b", "FAIL", ("x & <y>",)),)))
    case = ET.fromstring(xml).find("testsuite/testcase")
    assert case.get("name") == "a<b" and case.find("failure").text == "x & <y>"


def test_plan_and_gate_agree_on_the_label_budget(project):
    # TPR = TNR = 0.9
    report = make(project, 30, 30, lambda i, label: label if i % 30 < 27 else not label)
    result = decide(project, report)
    assert result.status == "INCONCLUSIVE"
    from judgekit.gate import plan
    from judgekit.inputs.policy import Policy
    from judgekit.inputs.project import load_inputs

    _, sets = load_inputs(project.criteria, project.sets)
    lines = plan(report, Policy(), sets, ["c"])
    assert "known-good: 30 labelled, TPR 0.90 (observed): 68 needed, 38 more" in lines[0]
    assert result.decisions[0].needed == {"pass": 38, "fail": 38}
    assumed = plan(None, Policy(), sets, ["c"], assume=(1.0, 0.5))
    # min_examples
    assert "known-good: 30 labelled" in assumed[0] and "enough (20 needed)" in assumed[0]
    assert "not above 0.80" in assumed[1]
    strict = plan(
        None, Policy(defaults=Thresholds(min_examples=40)), sets, ["c"], assume=(1.0, 1.0)
    )
    assert "40 needed, 10 more" in strict[0]
    result = runner.invoke(app, ["plan", "--assume-tpr", "0.95"])
    assert result.exit_code == 2
    assert runner.invoke(app, ["plan", "-c", "typo-id"]).exit_code == 2


def _tampered(report: dict, change) -> dict:
    data = json.loads(json.dumps(report))
    change(data["criteria"][0])
    return data


FUTURE = (datetime.now(UTC) + timedelta(days=3)).isoformat()
TAMPERING = {
    "tpr infinite": lambda c: c["metrics"].update(tpr=float("inf")),
    "tpr 5": lambda c: c["metrics"].update(tpr=5),
    "confusion contradicting the metrics": lambda c: (
        c["confusion"].update(tp=40, fn=0, tn=40, fp=0) or c["metrics"].update(tpr=0.2)
    ),
    "negative cells": lambda c: c["confusion"].update(fp=-10, tn=50),
    "cells not adding up": lambda c: c["confusion"].update(tp=400),
    "abstained -300": lambda c: c.update(abstained=-300),
    "no intervals": lambda c: c.update(intervals={}),
    "calibrated in the future": lambda c: c.update(calibrated_at=FUTURE),
    "evidence from the future": lambda c: c.update(evidence_at=FUTURE),
    "more known-good examples": lambda c: c.update(labelled_pass=400),
}


@pytest.mark.parametrize("how", list(TAMPERING))
def test_a_hand_edited_report_does_not_pass_the_gate(project, how):
    """The gate recomputes every figure it decides on from verdicts.jsonl and the set on disk."""
    # TPR 0.87, TNR 0.89: FAIL
    make(project, 15, 35, lambda i, label: label if i % 10 else not label)
    (project.root / "judgekit.yaml").write_text(
        "gate: {min_tpr: 0.6, min_tnr: 0.6, min_examples: 10, max_age: 1d}\n"
    )
    assert runner.invoke(app, ["gate"]).exit_code == 0  # honest: it passes this lenient policy
    path = project.root / ".judgekit/reports/latest/report.json"
    honest = json.loads(path.read_text())
    path.write_text(json.dumps(_tampered(honest, TAMPERING[how])))
    result = runner.invoke(app, ["gate"])
    assert result.exit_code == 1 and "the report is not evidence" in result.output, result.output
    assert len([line for line in result.output.splitlines() if line.startswith("FAIL")]) == 1


def test_the_gate_needs_the_verdicts_and_one_entry_per_criterion(project):
    make(project, 40, 40, good)
    folder = project.root / ".judgekit/reports/latest"
    assert runner.invoke(app, ["gate"]).exit_code == 0
    honest = json.loads((folder / "report.json").read_text())
    flipped = _tampered(
        honest, lambda c: c.update(confusion={"tp": 0, "fp": 40, "tn": 0, "fn": 40})
    )
    (folder / "report.json").write_text(
        json.dumps({**honest, "criteria": [*honest["criteria"], *flipped["criteria"]]})
    )
    twice = runner.invoke(app, ["gate"])
    assert twice.exit_code == 1 and "holds 2 entries for this criterion" in twice.output
    (folder / "report.json").write_text(json.dumps(honest))
    lines = (folder / "verdicts.jsonl").read_text().splitlines()
    # one example's verdict gone: not the verdict file the report was written with
    (folder / "verdicts.jsonl").write_text("\n".join(lines[1:]) + "\n")
    unpaired = runner.invoke(app, ["gate"])
    assert unpaired.exit_code == 1 and "not the verdict file report.json was written with" in (
        unpaired.output
    )
    # A report that names no verdict file (as an older judgekit wrote) is checked line by line.
    (folder / "report.json").write_text(json.dumps({**honest, "verdicts_sha256": None}))
    short = runner.invoke(app, ["gate"])
    assert short.exit_code == 1 and "79 of the set's 80 examples have verdicts" in short.output
    (folder / "verdicts.jsonl").write_text(
        "\n".join([*lines, lines[0].replace('"p0"', '"nobody"')]) + "\n"
    )
    stranger = runner.invoke(app, ["gate"])
    assert (
        stranger.exit_code == 1
        and "for id 'nobody', which the calibration set does not hold" in stranger.output
    )
    (folder / "verdicts.jsonl").unlink()
    gone = runner.invoke(app, ["gate"])
    assert gone.exit_code == 1 and "no verdicts.jsonl beside the report" in gone.output


def test_gate_and_plan_say_the_same_thing_with_one_number(project):
    """An observed TPR under the threshold: both say labels cannot help; too few examples and a
    straddling interval: one count per class; a count no labelling reaches: said so."""
    from judgekit.gate import plan
    from judgekit.inputs.project import load_inputs

    # TPR 0.75
    report = make(project, 40, 40, lambda i, label: label if (i % 4) or not label else not label)
    result = decide(project, report)
    _, sets = load_inputs(project.criteria, project.sets)
    lines = plan(report, Policy(), sets, ["c"])
    words = (
        "at TPR 0.75 (not above 0.80) more known-good examples cannot show it clears 0.80: "
        "improve the judge"
    )
    assert result.status == "INCONCLUSIVE" and words in result.decisions[0].reasons
    assert lines[0].endswith(words) and result.decisions[0].needed is None
    few = make(project, 15, 30, good)  # too few known-good, and TPR 1.00 on 15 straddles nothing
    decision = decide(project, few).decisions[0]
    assert "about 5 more known-good examples would settle it" in decision.reasons
    assert decision.needed == {"pass": 5} and sum("more" in r for r in decision.reasons) == 1
    # TNR 399/400 against 0.997
    far = make(project, 40, 400, lambda i, label: label if i != 100 else not label)
    far_decision = decide(project, far, min_tnr=0.997).decisions[0]
    assert (
        "not reachable by labelling" in far_decision.summary and "19," not in far_decision.summary
    )


def test_recompute_takes_trials_in_any_order_and_refuses_a_trial_twice():
    from judgekit.gate.evidence import recompute
    from judgekit.inputs.label_reader import Labelled, LabelledSet
    from judgekit.report.reading import Line, Untrusted

    at = datetime(2026, 1, 1, tzinfo=UTC)
    labels = LabelledSet("c", None, "d", (Labelled("a", True, None), Labelled("b", False, None)))
    lines = [
        Line("c", "a", 2, False, at),
        Line("c", "b", 0, False, at),
        Line("c", "a", 0, True, at),
        Line("c", "a", 1, True, at),
        Line("c", "b", 1, True, at),
        Line("c", "b", 2, False, at),
    ]
    f = recompute(None, lines, labels)
    assert (f.n, f.trials, f.confusion, f.decided, f.evidence_at) == (
        2,
        3,
        (1, 0, 1, 0),
        ((True, True), (False, False)),
        at,
    )
    assert f.flip_rate == 1.0 and [v.confidence for v in f.stages[0]] == [2 / 3, 2 / 3]
    with pytest.raises(Untrusted, match="two verdicts for id 'b' trial 1"):
        recompute(None, [*lines, Line("c", "b", 1, False, at)], labels)
