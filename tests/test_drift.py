"""Drift between two runs: McNemar and flips against statsmodels / scipy, the decision rule on real
LLMBar verdicts and in simulation, and `judgekit drift` / `judgekit recheck` end to end."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import balanced, llm_criterion
from hypothesis import given, settings, strategies as st

from judgekit.cli import app
from judgekit.inputs.settings import DriftPolicy
from judgekit.pipeline import Options, measure
from judgekit.watch.drift import compare, flip_excess, mcnemar_exact
from judgekit.watch.history import History, HistoryRun, record_history


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_matches_statsmodels_exact(b, c):
    from statsmodels.stats.contingency_tables import mcnemar

    assert mcnemar_exact(b, c) == pytest.approx(
        mcnemar([[10, b], [c, 10]], exact=True).pvalue, abs=1e-12
    )


def test_flip_excess_is_the_binomial_upper_tail():
    from scipy.stats import binomtest

    for flips, n in ((0, 50), (3, 100), (12, 200)):
        assert flip_excess(flips, n, 0.02) == pytest.approx(
            binomtest(flips, n, 0.02, alternative="greater").pvalue
        )


def _run(run_id, model="m", prompt="p", parameters=None, set_fp="s"):
    return HistoryRun(
        run_id,
        "c",
        datetime(2026, 11, run_id, tzinfo=UTC),
        "calibrate",
        f"{model}/{prompt}",
        model,
        prompt,
        parameters or {"temperature": 0},
        set_fp,
        None,
        "live",
        0,
        0,
        {},
    )


def _judge(rng, labels, tpr=0.9, tnr=0.85):
    return np.where(labels, rng.random(labels.size) < tpr, rng.random(labels.size) >= tnr)


def _outcomes(labels, verdicts):
    return {
        f"e{i}": (bool(label), bool(verdict))
        for i, (label, verdict) in enumerate(zip(labels, verdicts, strict=True))
    }


def test_silent_change_on_ten_percent_is_flagged_and_an_unchanged_noisy_judge_is_not():
    """200 examples; 300 simulated pairs of runs each (benchmarks/drift.py runs 2,000)."""
    rng = np.random.default_rng(20261130)
    policy = DriftPolicy()
    flagged = false_alarms = 0
    for _ in range(300):
        labels = rng.random(200) < 0.5
        verdicts = _judge(rng, labels)
        changed = verdicts.copy()
        touched = rng.choice(200, 20, replace=False)
        changed[touched] = ~changed[touched]  # silently changed on 10% of the examples
        flagged += (
            compare(
                _run(1), _run(2), _outcomes(labels, verdicts), _outcomes(labels, changed), policy
            ).status
            == "DRIFT"
        )
        # Nothing changed but the judge's own noise, at the most the policy allows: each run
        # departs from the judge's usual verdict with probability q, so an example flips
        # between runs with 2q(1-q) = 2%.
        q = (1 - (1 - 2 * policy.max_run_flip_rate) ** 0.5) / 2
        first, second = (np.where(rng.random(200) < q, ~verdicts, verdicts) for _ in range(2))
        false_alarms += (
            compare(
                _run(1), _run(2), _outcomes(labels, first), _outcomes(labels, second), policy
            ).status
            == "DRIFT"
        )
    assert flagged / 300 >= 0.99
    assert false_alarms / 300 <= 0.05


def test_same_fingerprint_different_answers_is_called_a_silent_provider_change():
    labels = np.array([True] * 50 + [False] * 50)
    before = labels.copy()
    after = labels.copy()
    after[:10] = False
    result = compare(_run(1), _run(2), _outcomes(labels, before), _outcomes(labels, after))
    assert result.status == "DRIFT" and result.changed == [] and result.exit_code == 1
    assert any("silent provider-side change" in r for r in result.reasons)
    assert result.to_fail == [f"e{i}" for i in range(10)] and result.to_pass == []
    tpr_delta, low, high = result.changes["tpr"]
    assert tpr_delta == pytest.approx(-0.2) and low < -0.2 < high < 0


def test_a_prompt_change_that_flips_a_few_each_way_is_no_drift_and_says_what_changed():
    labels = np.array([True] * 50 + [False] * 50)
    before, after = labels.copy(), labels.copy()
    after[[0, 1, 60]] = ~after[[0, 1, 60]]
    before[[70, 71]] = ~before[[70, 71]]
    result = compare(
        _run(1), _run(2, prompt="q"), _outcomes(labels, before), _outcomes(labels, after)
    )
    assert result.status == "NO DRIFT" and result.changed == ["prompt"] and result.flip_p is None
    assert (result.right_to_wrong, result.wrong_to_right) == (3, 2)
    assert (
        "the prompt changed; agreement with the labels did not get significantly worse "
        "(one-sided exact McNemar p = 0.5)"
    ) in result.reasons


def test_a_significant_drop_is_drift_whatever_changed():
    """9 right->wrong against 2 wrong->right: two-sided p = 0.065, but one-sided p = 0.033 < 0.05.
    With a changed judge only a drop is drift, so the whole alpha goes to that side."""
    labels = np.array([True] * 50 + [False] * 50)
    before, after = labels.copy(), labels.copy()
    before[[60, 61]] = ~before[[60, 61]]
    after[list(range(9))] = False
    result = compare(
        _run(1), _run(2, model="other"), _outcomes(labels, before), _outcomes(labels, after)
    )
    assert result.status == "DRIFT" and result.exit_code == 1
    assert (result.right_to_wrong, result.wrong_to_right) == (9, 2)
    assert result.mcnemar_p > 0.05 and result.worse_p == pytest.approx(0.0327, abs=1e-4)
    assert (
        "the model changed and agreement with the labels got significantly worse "
        "(one-sided exact McNemar p = 0.033)" in result.reasons
    )
    assert result.to_dict()["worse_p"] == result.worse_p
    better = compare(
        _run(1), _run(2, model="other"), _outcomes(labels, after), _outcomes(labels, before)
    )
    assert better.status == "NO DRIFT" and "got significantly better" in better.reasons[0]


def test_the_changed_judge_test_is_exact_at_alpha_whatever_the_number_of_discordant_examples():
    """Under "agreement did not change", right->wrong is binomial(m, 1/2) given m
    discordant examples: the chance of DRIFT is at most alpha for every m, and uses most
    of it (no alpha / 2)."""
    from scipy.stats import binom

    from judgekit.watch.drift import mcnemar_worse

    sizes = [
        sum(binom.pmf(b, m, 0.5) for b in range(m + 1) if mcnemar_worse(b, m - b) < 0.05)
        for m in range(1, 80)
    ]
    assert max(sizes) <= 0.05
    assert max(sizes[20:]) > 0.04  # a test at alpha / 2 would stay under 0.025


def test_runs_without_a_shared_decided_example_cannot_be_compared():
    from judgekit.errors import InputError

    with pytest.raises(InputError, match="share no example"):
        compare(_run(1), _run(2), {"a": (True, True)}, {"b": (True, None)})


def _llmbar(shared_datasets, project, tmp_path):
    """LLMBar/Natural as a calibration set (positive: output 1 is the better one) and the recorded
    verdicts of three judge set-ups in the outputs-in-order (AB) position."""
    items = json.loads(
        (shared_datasets / "llmbar" / "data" / "LLMBar" / "Natural" / "dataset.json").read_text()
    )
    project.jsonl(
        "output-1-better",
        [
            {
                "id": str(i),
                "input": item["input"],
                "output": f"Output 1:\n{item['output_1']}\n\nOutput 2:\n{item['output_2']}",
                "passed": item["label"] == 1,
            }
            for i, item in enumerate(items)
        ],
    )
    files = {}
    with open(shared_datasets / "llmbar" / "verdicts.csv", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["set"] == "LLMBar/Natural"]
    for llm, strategy in (
        ("GPT-4", "Vanilla_NoRules"),
        ("GPT-4", "Rating_NoRules"),
        ("ChatGPT", "Vanilla_NoRules"),
    ):
        mine = [r for r in rows if r["llm"] == llm and r["strategy"] == strategy]
        assert len(mine) == 100
        path = tmp_path / f"{llm}-{strategy}.jsonl"
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "id": r["idx"],
                        "criterion": "output-1-better",
                        "passed": None
                        if r["winner_order_AB"] == ""
                        else r["winner_order_AB"] == "1",
                    }
                )
                + "\n"
                for r in mine
            )
        )
        files[llm, strategy] = path
    return files


def test_llmbar_prompt_change_is_no_drift_and_a_model_swap_is_drift(
    shared_datasets, project, tmp_path
):
    files = _llmbar(shared_datasets, project, tmp_path)
    vanilla = llm_criterion(
        "output-1-better", question="Does output 1 follow the instruction better than output 2?"
    )
    rating = {
        **vanilla,
        "pass_when": "Output 1 would get the higher 1-10 rating for following the instruction.",
    }
    history = tmp_path / "history.sqlite"

    def run(criterion, model, verdicts):
        project.criterion(criterion)
        report = measure(
            Options(
                criteria_dir=project.criteria, sets_dir=project.sets, verdicts=verdicts, model=model
            )
        )
        record_history(report, history)
        return report.criteria[0]

    gpt4 = run(vanilla, "openai/gpt-4", files["GPT-4", "Vanilla_NoRules"])
    gpt4_rating = run(rating, "openai/gpt-4", files["GPT-4", "Rating_NoRules"])
    run(vanilla, "openai/gpt-3.5-turbo", files["ChatGPT", "Vanilla_NoRules"])  # the third run
    assert (
        round(gpt4.metrics["cohen_kappa"], 3) == 0.837
        and round(gpt4_rating.metrics["cohen_kappa"], 3) == 0.811
    )
    with History.open(history) as db:
        first, second, third = db.runs()
        prompt = compare(first, second, db.outcomes(first.id), db.outcomes(second.id))
        swap = compare(first, third, db.outcomes(first.id), db.outcomes(third.id))
    # recorded from another file
    assert prompt.status == "NO DRIFT" and prompt.changed == [
        "prompt",
        "verdicts",
    ]
    assert len(prompt.to_fail) + len(prompt.to_pass) == 9 and prompt.mcnemar_p == pytest.approx(1.0)
    assert prompt.changes["cohen_kappa"][0] == pytest.approx(0.811 - 0.837, abs=0.001)
    assert swap.status == "DRIFT" and swap.changed == ["model", "verdicts"]
    assert (swap.right_to_wrong, swap.wrong_to_right) == (15, 2) and swap.mcnemar_p < 0.01
    assert swap.worse_p == pytest.approx(0.00117, abs=1e-5)  # the figure README.md quotes
    assert swap.changes["cohen_kappa"][2] < 0  # the whole interval of the change is below zero
    # The CLI, on the last two runs of the same set (the rating prompt, then
    # ChatGPT): exit 1, flips listed.
    result = CliRunner().invoke(app, ["drift", "--history", str(history)])
    assert (
        result.exit_code == 1
        and "drift: DRIFT" in result.output
        and "changed: model, prompt" in result.output
    )
    assert "pass->fail:" in result.output and "fail->pass:" in result.output
    named = CliRunner().invoke(
        app, ["drift", "--history", str(history), "--before", "1", "--after", "2", "--json"]
    )
    assert named.exit_code == 0 and json.loads(named.output)["drifts"][0]["status"] == "NO DRIFT"


def test_recheck_catches_a_silent_model_update_through_the_provider(project, tmp_path):
    from judgekit.testing import FakeServer, script

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(30, 30))
    runner = CliRunner()
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        common = [
            "--criteria",
            str(project.criteria),
            "--sets",
            str(project.sets),
            "--model",
            "openai/j",
            "--api-base",
            server.url,
        ]
        assert runner.invoke(app, ["calibrate", *common, "-q"]).exit_code == 0
        calls = server.requests
        same = runner.invoke(app, ["recheck", *common, "--size", "20"])
        assert same.exit_code == 0, same.output
        assert "drift: NO DRIFT" in same.output and "changed: nothing" in same.output
        assert server.requests == calls + 20  # asked again, not served from the cache
        # The provider silently updates its model: it now fails some known-good replies.
        server.answer = script(
            {
                "reply-p1": False,
                "reply-p2": False,
                "reply-p3": False,
                "reply-p4": False,
                "reply-p5": False,
                "reply-p": True,
            },
            default=False,
        )
        changed = runner.invoke(app, ["recheck", *common, "--size", "60"])
    assert changed.exit_code == 1, changed.output
    assert "silent provider-side change" in changed.output and "drift: DRIFT" in changed.output
    with History.open(tmp_path / ".judgekit" / "history.sqlite") as db:
        assert [r.purpose for r in db.runs()] == ["calibrate", "recheck", "recheck"]
        assert [r.n for r in db.runs()] == [60, 20, 60]


def test_canary_subset_is_frozen_and_balanced(project):
    from judgekit.inputs.criteria import load_criteria
    from judgekit.inputs.sets import load_sets

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(30, 30))
    cal = load_sets(project.sets, load_criteria(project.criteria))["says-blocked"]
    canary = cal.canary(10)
    assert [e.id for e in canary.examples] == [e.id for e in cal.canary(10).examples]
    assert sum(e.label for e in canary.examples) == 5 and len(canary.examples) == 10
    project.jsonl("says-blocked", balanced(30, 30) + balanced(1, 0, prefix="new-"))
    grown = load_sets(project.sets, load_criteria(project.criteria))["says-blocked"].canary(10)
    assert len({e.id for e in grown.examples} ^ {e.id for e in canary.examples}) <= 2


def test_a_judge_that_starts_abstaining_is_drift_even_when_nothing_is_decided():
    labels = np.array([True] * 30 + [False] * 30)
    before = _outcomes(labels, labels)
    mostly = {
        k: (label, None if int(k[1:]) >= 10 else verdict) for k, (label, verdict) in before.items()
    }
    result = compare(_run(1), _run(2), before, mostly)
    assert result.status == "DRIFT" and result.shared == 10 and len(result.newly_abstained) == 50
    assert result.right_to_wrong == 50 and any(
        "abstains on 50 example(s)" in r for r in result.reasons
    )
    silent = compare(
        _run(1), _run(2), before, {k: (label, None) for k, (label, _) in before.items()}
    )
    # no example decided in both: still compared
    assert silent.status == "DRIFT" and silent.shared == 0
    assert "abstained on 60 (60 newly, 0 no longer)" in "\n".join(silent.lines())
    prompt_change = compare(_run(1), _run(2, prompt="q"), before, mostly)
    assert prompt_change.status == "DRIFT"


def test_relabelled_examples_are_left_out_not_blamed_on_the_judge():
    labels = np.array([True] * 30 + [False] * 30)
    before = _outcomes(labels, labels)
    relabelled = {
        k: (not label if int(k[1:]) < 10 else label, verdict)
        for k, (label, verdict) in before.items()
    }
    result = compare(_run(1), _run(2, set_fp="t"), before, relabelled)
    assert result.status == "NO DRIFT" and result.compared == 50 and result.right_to_wrong == 0
    assert result.changed == ["set"] and any(
        "10 example(s) were relabelled" in r for r in result.reasons
    )
    assert result.changes["tnr"][0] == 0.0


def test_a_run_is_not_compared_with_itself():
    from judgekit.errors import InputError

    with pytest.raises(InputError, match="compared with itself"):
        compare(_run(1), _run(1), {"a": (True, True)}, {"a": (True, True)})


def test_recheck_finds_every_baseline_before_asking_and_follows_the_split(project, tmp_path):
    from judgekit.testing import FakeServer, script

    project.criterion(llm_criterion())
    project.criterion(llm_criterion("other"))
    examples = [{**e, "split": "test" if i % 2 else "dev"} for i, e in enumerate(balanced(20, 20))]
    project.jsonl("says-blocked", examples)
    project.jsonl("other", examples)
    runner = CliRunner()
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        common = [
            "--criteria",
            str(project.criteria),
            "--sets",
            str(project.sets),
            "--model",
            "openai/j",
            "--api-base",
            server.url,
        ]
        assert (
            runner.invoke(
                app, ["calibrate", *common, "-c", "says-blocked", "--split", "test", "-q"]
            ).exit_code
            == 0
        )
        asked = server.requests
        missing = runner.invoke(app, ["recheck", *common, "--split", "test"])
        assert (
            missing.exit_code == 2
            and "other: no calibration on this calibration set" in missing.output
        )
        assert server.requests == asked  # nothing was asked, nothing recorded
        # the whole set was never calibrated
        plain = runner.invoke(app, ["recheck", *common, "-c", "says-blocked"])
        assert (
            plain.exit_code == 2
            and "says-blocked: no calibration on this calibration set" in plain.output
        )
        ok = runner.invoke(
            app, ["recheck", *common, "-c", "says-blocked", "--split", "test", "--size", "6"]
        )
        assert ok.exit_code == 0, ok.output
        regex_only = runner.invoke(app, ["recheck", *common, "-c", "nope"])
        assert (
            regex_only.exit_code == 2
            and "recheck re-asks LLM and claims criteria" in regex_only.output
        )
    with History.open(tmp_path / ".judgekit" / "history.sqlite") as db:
        runs = db.runs()
    assert [(r.criterion, r.purpose, r.n) for r in runs] == [
        ("says-blocked", "calibrate", 20),
        ("says-blocked", "recheck", 6),
    ]
    assert runs[0].set_fingerprint == runs[1].set_fingerprint
    listed = runner.invoke(app, ["drift"])
    assert listed.exit_code == 0 and "drift: NO DRIFT" in listed.output


def test_drift_says_which_criteria_it_skipped(project, tmp_path):
    from judgekit.testing import FakeLLM

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(5, 5))
    path = tmp_path / "h.sqlite"
    # the set grows before the third run
    for records in (
        balanced(5, 5),
        balanced(5, 5),
        balanced(6, 5),
    ):
        project.jsonl("says-blocked", records)
        record_history(
            measure(
                Options(
                    criteria_dir=project.criteria,
                    sets_dir=project.sets,
                    model="openai/j",
                    cache_dir=None,
                ),
                llm=FakeLLM.scripted({"reply-p": True}, default=False),
            ),
            path,
        )
    result = CliRunner().invoke(app, ["drift", "--history", str(path)])
    assert result.exit_code == 0  # nothing to compare yet is no error (issue 33, item 20)
    assert "nothing to compare yet" in result.output
    assert (
        "says-blocked: skipped, its last run (run 3) is the first on its calibration set"
        in result.output
    )
    assert "--before 2 --after 3" in result.output


def test_recheck_asks_exactly_the_calibrated_judge(project, tmp_path):
    """After `calibrate --trials 3`, recheck asks three trials of the calibrated model at the
    calibrated endpoint (the YAML says trials 1), so a provider that starts answering
    differently is a silent change."""
    from judgekit.testing import FakeServer, script

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(20, 20))
    runner = CliRunner()
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        common = ["--criteria", str(project.criteria), "--sets", str(project.sets)]
        calibrated = runner.invoke(
            app,
            [
                "calibrate",
                *common,
                "--model",
                "openai/j",
                "--api-base",
                server.url,
                "--trials",
                "3",
                "-q",
            ],
        )
        assert calibrated.exit_code == 0, calibrated.output
        asked = server.requests
        # The provider now passes everything: 5 of the canary's 10 examples
        # (its known-bad half) flip.
        server.answer = script({}, default=True)
        unnamed = runner.invoke(app, ["recheck", *common, "--size", "10"])
        assert unnamed.exit_code == 2 and "recheck asks only an endpoint you name" in unnamed.output
        assert server.requests == asked
        result = runner.invoke(
            app, ["recheck", *common, "--size", "10", "--json", "--api-base", server.url]
        )
        # 10 examples x the 3 calibrated trials, at the calibrated endpoint
        assert server.requests - asked == 30
        drift = json.loads(result.output)["drifts"][0]
        assert result.exit_code == 1 and drift["status"] == "DRIFT" and drift["changed"] == []
        assert drift["right_to_wrong"] == 5 and "silent provider-side change" in " ".join(
            drift["reasons"]
        )
        other = runner.invoke(app, ["recheck", *common, "--model", "openai/other"])
        assert other.exit_code == 2 and "is not the calibrated judge" in other.output
        elsewhere = runner.invoke(app, ["recheck", *common, "--api-base", "http://127.0.0.1:9/v1"])
        assert elsewhere.exit_code == 2 and "is not the calibrated endpoint" in elsewhere.output
        project.criterion(llm_criterion(pass_when="The reply says the card is now blocked."))
        edited = runner.invoke(app, ["recheck", *common, "--api-base", server.url])
        assert edited.exit_code == 2 and "changed since that calibration" in edited.output
        assert server.requests - asked == 30  # refusals ask nothing


def test_an_endpoint_read_from_the_history_alone_is_never_asked(project, tmp_path):
    """A history is data, not settings: one imported, shared or edited can name any endpoint.
    Recheck sends the provider's key and the canary only to an endpoint the user names now."""
    import sqlite3

    from judgekit.testing import FakeServer, script

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(10, 10))
    history = tmp_path / "h.sqlite"
    common = [
        "--criteria",
        str(project.criteria),
        "--sets",
        str(project.sets),
        "--history",
        str(history),
    ]
    runner = CliRunner()
    with (
        FakeServer(script({"reply-p": True}, default=False)) as ours,
        FakeServer(script({})) as theirs,
    ):
        calibrated = runner.invoke(
            app, ["calibrate", *common, "--model", "openai/j", "--api-base", ours.url, "-q"]
        )
        assert calibrated.exit_code == 0, calibrated.output
        with sqlite3.connect(history) as db:
            db.execute("UPDATE runs SET api_base = ?", (theirs.url,))
        redirected = runner.invoke(app, ["recheck", *common, "--size", "10"])
        # The endpoint is part of the judge's identity: the run's record no longer matches the
        # fingerprint it was stored with, so nothing is asked at all.
        edited = "the history's record of its last calibration (run 1), changed"
        assert redirected.exit_code == 2 and edited in redirected.output
        ours_named = runner.invoke(
            app, ["recheck", *common, "--size", "10", "--api-base", ours.url]
        )
        assert ours_named.exit_code == 2 and edited in ours_named.output
        assert theirs.requests == 0 and ours.requests == 20


def test_ids_and_models_from_the_history_cannot_drive_the_terminal(project, tmp_path):
    """A history (or a set, or recorded verdicts) may hold any text: escape sequences, carriage
    returns and bidirectional overrides are printed as escapes; other Unicode stays readable."""
    import sqlite3

    from judgekit.testing import FakeLLM

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(5, 5))
    path = tmp_path / "h.sqlite"
    for judge in (
        FakeLLM.scripted({"reply-p": True}, default=False),
        FakeLLM.scripted({}, default=False),
    ):
        record_history(
            measure(
                Options(
                    criteria_dir=project.criteria,
                    sets_dir=project.sets,
                    model="openai/j",
                    cache_dir=None,
                ),
                llm=judge,
            ),
            path,
        )
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE runs SET criterion = 'café\x1b[31m-blocked', model = 'evil\x1b]0;owned\x07\r'"
        )
        db.execute("UPDATE verdicts SET example_id = example_id || '\x1b[2J\u202e日本'")
    for command in (["drift", "--history", str(path)], ["history", "--history", str(path)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code in (0, 1), result.output
        assert not any(ch in result.output for ch in "\x1b\x07\r\u202e"), result.output
        assert "café\\x1b[31m-blocked" in result.output
    drift = CliRunner().invoke(app, ["drift", "--history", str(path)]).output
    assert "pass->fail: p0\\x1b[2J\\u202e日本, p1\\x1b[2J\\u202e日本" in drift
    listed = CliRunner().invoke(app, ["history", "--history", str(path)]).output
    assert "evil\\x1b]0;owne" in listed  # the model column, cut at 24 characters after escaping
    missing = CliRunner().invoke(app, ["drift", "--history", str(path), "-c", "nope\x1b[2J"])
    assert (
        missing.exit_code == 2 and "nope\\x1b[2J" in missing.output and "\x1b" not in missing.output
    )


def test_recheck_sizes_its_canary_to_see_a_drop_of_0_2_and_says_what_it_can_see(project, tmp_path):
    """Issue 34, item 6: the default canary of 10 printed NO DRIFT when a judge's TNR fell from
    1.00 to 0.60; the default is as large as finding a drop of 0.2 in TPR or TNR 80% of the time
    needs at the calibrated rates, and every re-check says the drop its canary can see."""
    from judgekit.testing import FakeServer, script
    from judgekit.watch.canary import canary_size, power

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(40, 40))
    runner = CliRunner()
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        common = ["--model", "openai/j", "--api-base", server.url]
        assert runner.invoke(app, ["calibrate", *common, "-q"]).exit_code == 0
        # the provider's update: 16 of the 40 known-bad replies now pass (TNR 1.00 -> 0.60)
        server.answer = script(
            {
                **{f"reply-f{i}:": True for i in range(0, 40, 5)},
                **{f"reply-f{i}:": True for i in range(1, 40, 5)},
                "reply-p": True,
            },
            default=False,
        )
        small = runner.invoke(app, ["recheck", *common, "--size", "10"])
        default = runner.invoke(app, ["recheck", *common])
    size = canary_size(1.0, 1.0, 0.05, 0.02)
    assert size == 54 and power(size, 1.0, 0.2, 0.05, 0.02) >= 0.8
    assert "says-blocked: a canary of 10 examples finds a drop of 0.50 in TPR or TNR 80%" in (
        small.output
    )
    assert default.exit_code == 1 and "drift: DRIFT" in default.output, default.output
    assert f"says-blocked: a canary of {size} examples finds a drop of 0.20" in default.output
    with History.open(tmp_path / ".judgekit" / "history.sqlite") as db:
        assert [r.n for r in db.runs()] == [80, 10, size]


def test_a_rate_from_the_history_that_is_no_rate_cannot_shrink_the_canary():
    """The calibrated rates come from a history anyone may have written: a TNR of 50 would make
    every right verdict count fifty times and size the canary far below what a drop needs."""
    from judgekit.watch.canary import canary_size

    assert canary_size(1.0, 50.0, 0.05, 0.02) == canary_size(1.0, 1.0, 0.05, 0.02) == 54


def test_a_judge_that_abstains_on_the_whole_canary_is_drift_the_gate_then_fails(project, tmp_path):
    """A calibration whose judge gives no verdict at all stops with exit 4 (judgekit.errors.
    NoVerdicts); a recheck whose canary the judge now refuses whole must not: it is drift, and
    the history records it so that the gate FAILs until the judge is calibrated again."""
    from judgekit.testing import FakeServer, Fault, script

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(30, 30))
    runner = CliRunner()
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        common = ["--model", "openai/j", "--api-base", server.url]
        assert runner.invoke(app, ["calibrate", *common, "-q", "--gate"]).exit_code == 0
        server.answer = script({}, default=Fault("refusal"))
        refused = runner.invoke(app, ["recheck", *common, "--size", "20"])
        assert refused.exit_code == 1, refused.output
        assert "drift: DRIFT" in refused.output and "abstained on 20" in refused.output
        gate = runner.invoke(app, ["gate"])
    assert gate.exit_code == 1, gate.output
    assert "drift" in gate.output.lower()
