"""Early stopping: settled decisions, calls saved, reproducible order; error rates by simulation
live in benchmarks/early_stopping.py."""

import json
from dataclasses import replace

import numpy as np
import pytest

from judgekit.gate import Gate
from judgekit.inputs.policy import Thresholds
from judgekit.pipeline import Options, measure
from judgekit.stats.metrics import wilson
from judgekit.stats.sequential import settle
from judgekit.testing import FakeLLM
from tests.conftest import balanced, llm_criterion

T = Thresholds(min_tpr=0.8, min_tnr=0.8, min_examples=20)


def test_nothing_is_settled_before_min_examples_of_each_class():
    # Eight known-good examples, two judged right: the old alpha-spending rule called this FAIL.
    assert settle((2, 8), (8, 8), (192, 192), T) is None
    assert settle((0, 19), (0, 30), (0, 0), T) is None  # hopeless, but 19 < 20 known-good decided
    assert settle((0, 20), (0, 30), (0, 0), T) == "FAIL"
    assert settle((30, 30), (30, 30), (0, 0), replace(T, min_examples=40)) is None


def test_settled_only_when_no_verdict_left_can_change_the_full_set_decision():
    # 180 of 180 known-good right: 20 wrong still leave 180/200, whose 95% lower bound is 0.85.
    assert settle((180, 180), (190, 190), (20, 10), T) == "PASS"
    # ... but 60 left could bring it to 180/240 = 0.75: not settled, though 180/180 looks perfect.
    assert settle((180, 180), (190, 190), (60, 10), T) is None
    # 20 of 80 right, 120 left: even all right is 140/200, 95% upper bound 0.76 < 0.80.
    assert settle((20, 80), (30, 30), (120, 170), T) == "FAIL"
    # 180/240: the upper bound reaches 0.8006
    assert settle((20, 80), (30, 30), (160, 170), T) is None
    assert settle((180, 180), (190, 190), (0, 0), replace(T, min_kappa=0.5)) is None
    point = replace(T, use_lower_bound=False)
    assert settle((160, 180), (190, 190), (20, 10), point) == "PASS"  # 160/200 = 0.80 at worst
    # 159/200 at worst, 179/200 at best
    assert settle((159, 180), (190, 190), (20, 10), point) is None


def test_wilson_bounds_move_one_way_with_each_verdict():
    """What curtailment rests on: a wrong verdict never raises a bound, a right one
    never lowers it."""
    for n in range(1, 301):
        for right in range(n + 1):
            low, high = wilson(right, n)
            assert (
                wilson(right, n + 1)[0] <= low + 1e-12 and wilson(right, n + 1)[1] <= high + 1e-12
            )
            assert (
                wilson(right + 1, n + 1)[0] >= low - 1e-12
                and wilson(right + 1, n + 1)[1] >= high - 1e-12
            )


def test_a_settled_decision_is_the_full_set_decision_whatever_the_rest():
    """Every completion of a small set (25 + 25): wherever settle decides, the gate's rule on the
    whole set agrees, for every way the examples left could be judged."""
    t = replace(T, min_examples=10)

    def full(right, decided, threshold):
        low, high = wilson(right, decided)
        return "FAIL" if high < threshold else ("PASS" if low >= threshold else None)

    rng = np.random.default_rng(1)
    for _ in range(400):
        judged_pos, judged_neg = (int(x) for x in rng.integers(10, 26, 2))
        right_pos, right_neg = (
            int(rng.integers(0, judged_pos + 1)),
            int(rng.integers(0, judged_neg + 1)),
        )
        left = (25 - judged_pos, 25 - judged_neg)
        decision = settle((right_pos, judged_pos), (right_neg, judged_neg), left, t)
        if decision is None:
            continue
        for more_pos in range(left[0] + 1):
            for more_neg in range(left[1] + 1):
                tpr = full(right_pos + more_pos, 25, t.min_tpr)
                tnr = full(right_neg + more_neg, 25, t.min_tnr)
                assert decision == (
                    "FAIL" if "FAIL" in (tpr, tnr) else "PASS" if tpr == tnr == "PASS" else None
                )


@pytest.fixture
def big(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(200, 200))
    return project


def options(project, **extra):
    return Options(
        **{
            "criteria_dir": project.criteria,
            "sets_dir": project.sets,
            "model": "m",
            "cache_dir": None,
            "stop_early": True,
            "concurrency": 10,
            **extra,
        }
    )


def test_a_good_judge_passes_early_and_the_gate_agrees(big):
    judge = FakeLLM.scripted({"reply-p": True, "reply-f": False})
    report = measure(options(big), llm=judge)
    c = report.criteria[0]
    assert c.early_stop.decision == "PASS" and c.early_stop.judged < 400
    assert c.early_stop.calls_saved == 400 - c.early_stop.judged == 400 - judge.calls
    # the set's classes
    assert c.n == c.early_stop.judged and (c.labelled_pass, c.labelled_fail) == (
        200,
        200,
    )
    assert Gate.from_project(big.criteria, big.sets).check(report).status == "PASS"


def test_a_constant_judge_fails_once_no_verdict_left_could_save_it(big):
    """Passing everything, TNR is 0 of the known-bad judged so far: once about 52 of the 200 are
    judged, even 148 right ones would leave TNR's 95% upper bound below 0.80."""
    judge = FakeLLM.scripted({}, default=True)
    c = measure(options(big), llm=judge).criteria[0]
    assert c.early_stop.decision == "FAIL" and judge.calls == c.early_stop.judged < 150
    assert min(c.confusion.tp, c.confusion.fp) >= 20  # min_examples of each class judged first
    fails = c.confusion.fp
    # stopped within one batch
    assert wilson(200 - fails, 200)[1] < 0.8 <= wilson(200 - fails + 10, 200)[1]


def test_order_is_seeded(big):
    def run(seed):
        judge = FakeLLM.scripted(
            {"reply-p1": False, "reply-p2": False, "reply-f3": True, "reply-p": True}, default=False
        )
        c = measure(options(big, seed=seed), llm=judge).criteria[0]
        return c.early_stop, [r.id for r in c.verdicts]

    assert run(1) == run(1)
    assert set(run(1)[1]) != set(run(2)[1])  # another seed judges other examples first


def test_settled_too_late_is_still_reported(big):
    """A judge exactly at the threshold never settles: every example is judged, decision null."""
    rng = np.random.default_rng(0)
    wrong = {f"reply-f{i}:" for i in range(200) if rng.random() < 0.2}
    judge = FakeLLM.scripted({**{w: True for w in wrong}, "reply-p": True}, default=False)
    c = measure(options(big), llm=judge).criteria[0]
    assert (
        c.early_stop.decision is None
        and c.early_stop.judged == 400
        and c.early_stop.calls_saved == 0
    )


def test_an_early_stop_is_derived_again_from_the_files(big, tmp_path):
    """Read back from disk, a stopped run passes the gate: its verdicts are the first examples of
    its seeded order, and the gate's own thresholds stop there."""
    judge = FakeLLM.scripted({"reply-p": True, "reply-f": False})
    report = measure(options(big), llm=judge)
    stop = report.criteria[0].early_stop
    assert stop.judged < 400 and (stop.seed, stop.batch) == (0, 10)
    report.write(tmp_path / "r")
    assert Gate.from_project(big.criteria, big.sets).check_path(tmp_path / "r").status == "PASS"


def _forged_stop(project, tmp_path, **stop):
    """A judge wrong on 20 of 40 known-bad replies, its report made to look stopped early: the
    figures of the 60 it got right (a calibration of those 60 alone, pointed at the whole set), its
    20 wrong verdicts gone, and `early_stop.judged` 60."""
    project.criterion(llm_criterion())
    whole = project.jsonl("says-blocked", balanced(40, 40))
    wrong = {f"reply-f{i}:": True for i in range(20)}
    judge = FakeLLM.scripted({**wrong, "reply-p": True}, default=False)
    honest = measure(options(project, stop_early=False), llm=judge)
    honest.write(tmp_path / "honest")
    right = [r for r in balanced(40, 40) if r["id"] not in {f"f{i}" for i in range(20)}]
    project.jsonl("says-blocked", right)
    measure(options(project, stop_early=False), llm=judge).write(tmp_path / "forged")
    whole.write_text("".join(json.dumps(r) + "\n" for r in balanced(40, 40)))
    path = tmp_path / "forged" / "report.json"
    data = json.loads(path.read_text())
    entry, real = data["criteria"][0], json.loads((tmp_path / "honest/report.json").read_text())
    entry["inputs"] = real["criteria"][0]["inputs"]  # the whole set's digest, as the gate reads it
    entry["labelled_pass"], entry["labelled_fail"] = 40, 40
    entry["early_stop"] = {"decision": "PASS", "judged": 60, "total": 80, "looks": 6}
    entry["early_stop"].update(calls_saved=20, **stop)
    path.write_text(json.dumps(data))
    return Gate.from_project(project.criteria, project.sets)


@pytest.mark.parametrize("stop", [{}, {"seed": 0, "batch": 10}, {"seed": 7, "batch": 60}])
def test_a_report_field_cannot_waive_the_verdicts_of_a_stopped_run(project, tmp_path, stop):
    gate = _forged_stop(project, tmp_path, **stop)
    assert gate.check_path(tmp_path / "honest").status == "FAIL"  # TNR 0.50
    result = gate.check_path(tmp_path / "forged")
    assert result.status == "FAIL", result.decisions[0].summary
    assert "the report is not evidence" in result.decisions[0].summary
