"""Early stopping: settled decisions, calls saved, reproducible order; error rates by simulation
live in benchmarks/early_stopping.py."""

import numpy as np
import pytest
from scipy.stats import binomtest

from judgekit.gate import Gate
from judgekit.pipeline import Options, calibrate
from judgekit.sequential import clopper_pearson, settle, spent
from judgekit.testing import FakeLLM
from tests.conftest import balanced, llm_criterion


@pytest.mark.parametrize("k, n", [(0, 10), (10, 10), (7, 20), (45, 50), (1, 1)])
def test_clopper_pearson_matches_scipy(k, n):
    ci = binomtest(k, n).proportion_ci(confidence_level=0.99, method="exact")
    assert clopper_pearson(k, n, 0.01) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_budgets_sum_to_alpha():
    assert sum(spent(0.05, k) for k in range(1, 200_000)) == pytest.approx(0.05, rel=1e-4)


def test_settle_needs_evidence_on_both_sides():
    assert settle((30, 30), (30, 30), 1, 0.8, 0.8, min_examples=20) == "PASS"
    assert settle((30, 30), (30, 30), 1, 0.8, 0.8, min_examples=40) is None
    assert settle((30, 30), (0, 30), 1, 0.8, 0.8, min_examples=20) == "FAIL"
    assert settle((25, 30), (27, 30), 1, 0.8, 0.8, min_examples=20) is None


@pytest.fixture
def big(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(200, 200))
    return project


def options(project, **extra):
    return Options(criteria_dir=project.criteria, sets_dir=project.sets, model="m", cache_dir=None,
                   stop_early=True, concurrency=10, **extra)


def test_a_good_judge_passes_early_and_the_gate_agrees(big):
    judge = FakeLLM.scripted({"reply-p": True, "reply-f": False})
    report = calibrate(options(big), llm=judge)
    c = report.criteria[0]
    assert c.early_stop.decision == "PASS" and c.early_stop.judged < 400
    assert c.early_stop.calls_saved == 400 - c.early_stop.judged == 400 - judge.calls
    assert c.n == c.early_stop.judged and (c.labelled_pass, c.labelled_fail) == (200, 200)  # the set's classes
    assert Gate.from_project(big.criteria, big.sets).check(report).status == "PASS"


def test_a_constant_judge_fails_within_the_first_looks(big):
    judge = FakeLLM.scripted({}, default=True)
    c = calibrate(options(big), llm=judge).criteria[0]
    assert c.early_stop.decision == "FAIL" and c.early_stop.looks <= 2 and judge.calls <= 20


def test_order_is_seeded(big):
    def run(seed):
        judge = FakeLLM.scripted({"reply-p1": False, "reply-p2": False, "reply-f3": True, "reply-p": True},
                                 default=False)
        c = calibrate(options(big, seed=seed), llm=judge).criteria[0]
        return c.early_stop, [r.id for r in c.verdicts]

    assert run(1) == run(1)
    assert set(run(1)[1]) != set(run(2)[1])  # another seed judges other examples first


def test_settled_too_late_is_still_reported(big):
    """A judge exactly at the threshold never settles: every example is judged, decision null."""
    rng = np.random.default_rng(0)
    wrong = {f"reply-f{i}:" for i in range(200) if rng.random() < 0.2}
    judge = FakeLLM.scripted({**{w: True for w in wrong}, "reply-p": True}, default=False)
    c = calibrate(options(big), llm=judge).criteria[0]
    assert c.early_stop.decision is None and c.early_stop.judged == 400 and c.early_stop.calls_saved == 0
