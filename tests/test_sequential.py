"""Early stopping: settled decisions, calls saved, reproducible order; error rates by simulation
live in benchmarks/early_stopping.py."""

import json
import math
from dataclasses import replace
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.gate import Gate
from judgekit.inputs.criteria import parse_criterion
from judgekit.inputs.identity import order_keys
from judgekit.inputs.policy import Thresholds
from judgekit.inputs.sets import Example
from judgekit.pipeline import Options, measure
from judgekit.stats.metrics import wilson
from judgekit.stats.sequential import (
    INTERIM_CONFIDENCE,
    content_order,
    content_seed,
    decide,
    interim,
    interim_looks,
    last_look,
    settle,
    stop_order,
    stopped_at,
)
from judgekit.testing import FakeLLM, FakeServer, script
from tests.conftest import balanced, llm_criterion

T = Thresholds(min_tpr=0.8, min_tnr=0.8, min_examples=20)
runner = CliRunner()


def llm_criterion_model():
    return parse_criterion(llm_criterion(), "says-blocked.yaml")


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
    c = measure(options(big, stop_rule="exact"), llm=judge).criteria[0]
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
        c = measure(options(big, seed=seed, stop_rule="exact"), llm=judge).criteria[0]
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
    report = measure(options(big, stop_rule="exact"), llm=judge)
    stop = report.criteria[0].early_stop
    assert stop.judged < 400 and (stop.seed, stop.batch, stop.rule) == (0, 10, "exact")
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


# The sequential rule: interim looks at a quarter, half and three quarters of the set.


def _clear_cut():
    """Right on 97% of each class: wrong on six known-good and six known-bad replies."""
    wrong = {f"reply-p{i}:": False for i in range(0, 200, 34)}
    wrong |= {f"reply-f{i}:": True for i in range(0, 200, 34)}
    return FakeLLM.scripted({**wrong, "reply-p": True}, default=False)


def test_the_sequential_rule_judges_at_most_half_of_a_clear_cut_judges_set(big, tmp_path):
    """The exact rule judges most of a 0.97 judge's set (20 wrong verdicts must not be able to
    pull a bound under); the sequential one stops at an interim look, and the report read back
    from disk passes the gate: the gate derives the same stop under the same rule."""
    exact, sequential = _clear_cut(), _clear_cut()
    by_exact = measure(options(big, stop_rule="exact"), llm=exact).criteria[0].early_stop
    report = measure(options(big), llm=sequential)
    stop = report.criteria[0].early_stop
    assert by_exact.decision == "PASS" and by_exact.judged > 300
    assert (stop.decision, stop.rule) == ("PASS", "sequential")
    assert stop.judged in interim_looks(400) and stop.judged <= 200 == 400 - 200
    assert sequential.calls == stop.judged and stop.calls_saved == 400 - stop.judged
    report.write(tmp_path / "r")
    assert Gate.from_project(big.criteria, big.sets).check_path(tmp_path / "r").status == "PASS"


def test_a_clearly_bad_judge_fails_at_the_first_interim_look(big):
    judge = FakeLLM.scripted({"reply-f1": True, "reply-f3": True, "reply-p": True}, default=False)
    stop = measure(options(big), llm=judge).criteria[0].early_stop  # TNR about 0.5
    assert (stop.decision, stop.judged) == ("FAIL", 100)


def test_the_sequential_order_is_the_sets_own_not_a_seeds_nor_the_files(big):
    """Neither a seed, nor the order of the set file's lines, nor the ids draw another order: the
    examples judged are the same, by what they are (each one's identity and label)."""

    def run(seed=0):
        c = measure(options(big, seed=seed), llm=_clear_cut()).criteria[0]
        judged = {r.id for r in c.verdicts}
        rows = {r["id"]: r for r in balanced(200, 200)}
        return c.early_stop, sorted(rows[i]["output"] for i in judged)

    first = run(1)
    assert first == run(2)
    rows = balanced(200, 200)
    keys = order_keys(llm_criterion_model(), [Example.model_validate(r) for r in rows])
    assert first[0].seed == content_seed(keys)
    big.jsonl("says-blocked", rows[::-1])  # the same examples, the file upside down
    assert run() == first
    renamed = [{**r, "id": f"x-{r['id']}"} for r in rows]
    big.jsonl("says-blocked", renamed)  # the same examples under other ids
    again = measure(options(big), llm=_clear_cut()).criteria[0]
    outputs = {r["id"]: r["output"] for r in renamed}
    assert again.early_stop == first[0]
    assert sorted(outputs[r.id] for r in again.verdicts) == first[1]


def test_a_sequential_stop_in_an_order_of_its_own_choosing_is_not_evidence(big, tmp_path):
    """A stop in an order shopped for (here: the set's own order reversed), written as the rule
    would have stopped in it: its verdicts are real and the rule decides there, but an interim
    decision is not the whole set's, and the gate derives the order itself."""
    full = measure(options(big, stop_early=False), llm=_clear_cut())
    full.write(tmp_path / "r")
    rows = balanced(200, 200)
    keys = order_keys(llm_criterion_model(), [Example.model_validate(r) for r in rows])
    shopped = content_order(keys, "says-blocked")[::-1]
    said = {r.id: r.passed for r in full.criteria[0].verdicts}
    labels = [rows[i]["passed"] for i in shopped]
    at, decided = stopped_at(labels, [said[rows[i]["id"]] for i in shopped], 10, T, "sequential")
    assert decided == "PASS" and at < 400  # the rule decides in the shopped order
    first = {rows[i]["id"] for i in shopped[:at]}
    path = tmp_path / "r"
    lines = (path / "verdicts.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["id"] in first]
    (path / "verdicts.jsonl").write_text("".join(line + "\n" for line in kept))
    data = json.loads((path / "report.json").read_text())
    data["verdicts_sha256"] = None
    data["criteria"][0]["early_stop"] = {
        "decision": decided,
        "judged": at,
        "total": 400,
        "looks": 1,
        "calls_saved": 400 - at,
        "seed": content_seed(keys),
        "batch": 10,
        "rule": "sequential",
    }
    (path / "report.json").write_text(json.dumps(data))
    decision = Gate.from_project(big.criteria, big.sets).check_path(path).decisions[0]
    assert decision.status == "FAIL"
    assert f"its verdicts are not those of the first {at} examples" in decision.summary


def test_a_sequential_stop_renamed_exact_is_not_evidence(big, tmp_path):
    report = measure(options(big), llm=_clear_cut())
    report.write(tmp_path / "r")
    path = tmp_path / "r" / "report.json"
    data = json.loads(path.read_text())
    data["criteria"][0]["early_stop"]["rule"] = "exact"
    path.write_text(json.dumps(data))
    decision = Gate.from_project(big.criteria, big.sets).check_path(tmp_path / "r").decisions[0]
    assert decision.status == "FAIL", decision.summary
    # the exact rule's order is the seed's: the verdicts are not its first 200
    assert "its verdicts are not those of the first 200 examples" in decision.summary


def test_verdicts_cut_short_where_no_rule_decided_are_not_evidence(big, tmp_path):
    """A full run's verdicts cut to the first 100 of the seeded order, called a stop: every
    verdict is real and in order, but no rule stops there, so the gate decided nothing on 100."""
    report = measure(options(big, stop_rule="exact"), llm=_clear_cut())
    report.write(tmp_path / "r")
    judged = {r.id for r in report.criteria[0].verdicts}
    order = [balanced(200, 200)[i]["id"] for i in stop_order(400, 0, "says-blocked")]
    kept = set(order[:100])
    assert report.criteria[0].early_stop.judged > 100 and kept <= judged
    lines = (tmp_path / "r" / "verdicts.jsonl").read_text().splitlines()
    kept_lines = [line for line in lines if json.loads(line)["id"] in kept]
    (tmp_path / "r" / "verdicts.jsonl").write_text("".join(line + "\n" for line in kept_lines))
    path = tmp_path / "r" / "report.json"
    data = json.loads(path.read_text())
    entry = data["criteria"][0]  # its figures are left: the stop is checked before them
    entry["early_stop"].update(judged=100, calls_saved=300, looks=10, decision="PASS")
    data["verdicts_sha256"] = None
    path.write_text(json.dumps(data))
    decision = Gate.from_project(big.criteria, big.sets).check_path(tmp_path / "r").decisions[0]
    assert decision.status == "FAIL", decision.summary
    assert "where early stopping (exact rule) decides nothing" in decision.summary


@pytest.mark.parametrize(
    ("tpr", "tnr", "decision"),
    [((50, 50), (50, 50), "PASS"), ((45, 50), (50, 50), None), ((30, 50), (50, 50), "FAIL")],
)
def test_interim_decisions_are_wilson_bounds_at_z_3(tpr, tnr, decision):
    assert interim(tpr, tnr, T) == decision
    low, high = wilson(*tpr, INTERIM_CONFIDENCE)
    assert (low >= 0.8) == (decision == "PASS") and (high < 0.8) == (decision == "FAIL")
    # the gate's own 95% bounds would decide sooner: the interim rule asks for more
    assert interim(tpr, tnr, replace(T, use_lower_bound=False)) is None


def test_the_interim_rule_speaks_only_at_its_looks():
    t = Thresholds(min_examples=5)
    left = (150, 150)  # far from settled by the exact rule
    assert decide((50, 50), (50, 50), left, t, "sequential", 100) == "PASS"
    assert decide((50, 50), (50, 50), left, t, "sequential", 110) is None  # looks: 103, 205, 308
    assert decide((50, 50), (50, 50), left, t, "exact", 100) is None
    # no curtailment: past the last interim look nothing stops the sequential rule but the end
    assert settle((0, 20), (20, 20), (10, 10), t) == "FAIL"
    assert decide((0, 20), (20, 20), (10, 10), t, "sequential", 40) is None


def test_a_sequential_run_judged_to_the_end_is_gated_at_its_last_looks_level(big, tmp_path):
    """172 of 200 known-good right: TPR's 95% lower bound clears 0.80, so a full calibration
    passes; the sequential rule looked three times and could have stopped, so its last look asks
    for more, and the same verdicts are INCONCLUSIVE."""
    wrong = {f"reply-p{i}:": False for i in range(28)}

    def judge():
        return FakeLLM.scripted({**wrong, "reply-p": True}, default=False)

    full = measure(options(big, stop_early=False), llm=judge())
    full.write(tmp_path / "full")
    gate = Gate.from_project(big.criteria, big.sets)
    assert gate.check_path(tmp_path / "full").status == "PASS"
    report = measure(options(big), llm=judge())
    stop = report.criteria[0].early_stop
    assert (stop.decision, stop.judged, stop.rule) == (None, 400, "sequential")
    report.write(tmp_path / "r")
    decision = gate.check_path(tmp_path / "r").decisions[0]
    assert decision.status == "INCONCLUSIVE", decision.summary
    order = [balanced(200, 200)[i] for i in stop_order(400, stop.seed, "says-blocked")]
    said = [e["passed"] and e["id"] not in {f"p{i}" for i in range(28)} for e in order]
    level = last_look([e["passed"] for e in order], said, Thresholds())
    assert 0.95 < level < 0.99 and f"{round(level * 100, 1):g}% interval" in decision.summary
    low = wilson(172, 200)[0]
    assert low >= 0.8 > wilson(172, 200, level)[0]


@pytest.mark.parametrize("theta", [0.8, 0.5])
def test_the_last_look_gives_back_what_the_interim_looks_could_spend(theta):
    """At a true rate on the threshold, each class's chance of a PASS over all looks (interim
    z = 3, then the last look's cut) is at most the full-set gate's, by exact sums: recomputed
    here by brute force over every path of a small class."""
    from itertools import product

    looks, total = (4, 8, 12), 16
    # interleaved: a quarter, half and three quarters of 32 hold 4, 8 and 12 of each class
    labels = [True, False] * total
    t = Thresholds(min_tpr=theta, min_tnr=theta, min_examples=1)
    level = last_look(labels, [True] * (2 * total), t)
    z_last = NormalDist().inv_cdf((1 + level) / 2)

    def score(x, n):
        return (x / n - theta) * math.sqrt(n) / math.sqrt(theta * (1 - theta))

    gate = {"PASS": 0.0, "FAIL": 0.0}
    rule = dict(gate)
    for path in product((0, 1), repeat=total):
        chance = math.prod(theta if v else 1 - theta for v in path)
        scores = [score(sum(path[:n]), n) for n in looks]
        last = score(sum(path), total)
        gate["PASS"] += chance * (last >= 1.959963984540054)
        gate["FAIL"] += chance * (last < -1.959963984540054)
        rule["PASS"] += chance * (any(z >= 3 for z in scores) or last >= z_last)
        rule["FAIL"] += chance * (any(z < -3 for z in scores) or last < -z_last)
    assert all(rule[side] <= gate[side] + 1e-12 for side in gate), (rule, gate)
    # At 0.8 a FAIL at the first look (0 of 4) can end above the gate's cut: the last look is
    # stricter. At 0.5 every path that crosses early also ends past the gate's cut: nothing to
    # give back, and the last look is the gate's.
    assert (z_last > 1.96) == (theta == 0.8)


def test_the_cli_names_the_rule_it_stopped_by_and_refuses_an_unknown_one(project):
    """`calibrate --stop-early` over HTTP: the sequential rule by default, `--stop-rule exact` on
    request, each named in report.json; an unknown rule is refused before any call."""
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(200, 200))
    base = ["calibrate", "--model", "openai/j", "--stop-early", "--no-history", "--no-cache"]
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        wrong = runner.invoke(app, [*base, "--api-base", server.url, "--stop-rule", "soon"])
        assert wrong.exit_code == 2 and "--stop-rule" in wrong.output and server.requests == 0
        for rule, judged in (("sequential", 100), ("exact", None)):
            result = runner.invoke(app, [*base, "--api-base", server.url, "--stop-rule", rule])
            assert result.exit_code == 0, result.output
            stop = json.loads(Path(".judgekit/reports/latest/report.json").read_text())["criteria"][
                0
            ]["early_stop"]
            assert stop["rule"] == rule and stop["decision"] == "PASS"
            assert stop["judged"] == judged if judged else stop["judged"] > 100
