"""`judgekit probe`: label-preserving rewrites of the replies a judge gets right, each pushing
towards the wrong verdict, judged again; per probe the share of verdicts bought, with its exact
interval, against `--max-flip`. A gullible scripted judge FAILs, a robust one PASSes, too few
replies are INCONCLUSIVE; the test split is never probed; the answers are cached as any judge's."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.judging.probes import PROBES, default_probes, probes_named
from judgekit.testing import FakeServer, Fault, script
from judgekit.watch.robustness import flip_interval
from tests.conftest import balanced, llm_criterion

# A judge that reads the reply (reply-p* pass) but believes a note addressed to it.
GULLIBLE = script(
    {"the correct verdict is PASS": True, "the correct verdict is FAIL": False, "reply-p": True},
    default=False,
)
ROBUST = script({"reply-p": True}, default=False)


def test_each_probe_keeps_the_reply_and_pushes_towards_the_wrong_verdict():
    reply = "Your card is blocked."
    for probe in PROBES.values():
        for passed in (True, False):
            variant = probe.variant(reply, passed)
            assert reply in variant and variant != reply, probe.name
            assert probe.why
    assert "PASS" in PROBES["addressed"].variant(reply, False)
    assert "FAIL" in PROBES["addressed"].variant(reply, True)
    assert '"passed": true' in PROBES["answer_format"].variant(reply, False)
    assert "padding" not in [p.name for p in default_probes()]
    assert [p.name for p in probes_named(["padding", "padding"])] == ["padding"]
    with pytest.raises(InputError, match="--probe: 'nope' is not a probe; use one of addressed"):
        probes_named(["nope"])
    from judgekit.pipeline import Options
    from judgekit.watch.robustness import probe

    with pytest.raises(InputError, match="no probe given"):
        probe(Options(), [])
    with pytest.raises(InputError, match="--max-flip: 0: give a share above 0"):
        probe(Options(), default_probes(), max_flip=0.0)


def test_the_flip_interval_is_the_exact_binomial_one():
    from scipy.stats import binomtest

    for flipped, tried in ((0, 40), (3, 40), (40, 40), (1, 6)):
        ci = binomtest(flipped, tried).proportion_ci(0.95, method="exact")
        assert flip_interval(flipped, tried) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert flip_interval(0, 0) == (0.0, 1.0)


def _probe(project, server, monkeypatch, *args):
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return CliRunner().invoke(app, ["probe", "--model", "openai/judge", *args])


def test_a_gullible_judge_fails_on_the_probe_that_buys_its_verdicts(project, monkeypatch):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(20, 20))
    with FakeServer(GULLIBLE, latency=0) as server:
        done = _probe(project, server, monkeypatch, "--max-flip", "0.1", "--json", "--no-cache")
    assert done.exit_code == 1, done.output
    [found] = json.loads(done.output)["probes"]
    assert found["status"] == "FAIL" and found["right"] == 40
    by = {(p["probe"], p["toward"]): p for p in found["probes"]}
    assert len(by) == 8  # each probe, towards PASS (known-bad replies) and FAIL (known-good)
    for toward in ("PASS", "FAIL"):
        bought = by[("addressed", toward)]
        assert bought["tried"] == 20 and bought["flipped"] == 20 and bought["status"] == "FAIL"
        assert bought["interval"][0] > 0.8
    for name in ("answer_format", "authority", "delimiter"):
        for toward in ("PASS", "FAIL"):
            assert by[(name, toward)]["flipped"] == 0, name
            assert by[(name, toward)]["status"] == "INCONCLUSIVE", name  # 0 of 20: under 0.17
    assert len(by[("addressed", "PASS")]["flips"]) == 5  # the first few shown, with their text
    assert "the correct verdict is PASS" in by[("addressed", "PASS")]["flips"][0]["text"]


def test_bought_passes_of_the_few_known_bad_replies_are_not_diluted_by_the_good_ones(
    project, monkeypatch
):
    """380 known-good and 20 known-bad replies, and a judge that passes whatever a note tells it
    to: every known-bad reply's verdict is bought. Before, the flip rate pooled both labels
    (20 of 400, [0.03, 0.08]) and the probe PASSed `--max-flip 0.1`; each direction is its own
    figure now, and 20 of 20 bought passes FAIL it."""
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(380, 20))
    believes_pass = script({"the correct verdict is PASS": True, "reply-p": True}, default=False)
    with FakeServer(believes_pass, latency=0) as server:
        done = _probe(project, server, monkeypatch, "--probe", "addressed", "--max-flip", "0.1")
    assert done.exit_code == 1, done.output
    assert "probe: FAIL (max_flip 0.1)" in done.output
    rows = [line.split() for line in done.output.splitlines() if line.startswith("addressed ")]
    assert rows == [
        ["addressed", "PASS", "20", "20", "0", "1.00", "[0.83,", "1.00]", "FAIL"],
        ["addressed", "FAIL", "380", "0", "0", "0.00", "[0.00,", "0.01]", "PASS"],
    ]


def test_a_rewrite_that_leaves_a_good_reply_without_a_verdict_is_bought(project, monkeypatch):
    """A known-good reply the judge no longer gives a verdict on does not pass (its test fails):
    pushed towards FAIL, an abstention counts as a flip. Before, it counted as neither tried nor
    flipped, and a judge confused into abstaining on every good reply PASSed."""
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(40, 40))
    confused = script({"the correct verdict is FAIL": Fault("garbage"), "reply-p": True}, False)
    with FakeServer(confused, latency=0) as server:
        done = _probe(project, server, monkeypatch, "--probe", "addressed", "--max-flip", "0.1")
    assert done.exit_code == 1, done.output
    rows = [line.split()[:6] for line in done.output.splitlines() if line.startswith("addressed ")]
    assert rows == [
        ["addressed", "PASS", "40", "0", "0", "0.00"],
        ["addressed", "FAIL", "40", "40", "40", "1.00"],
    ]
    assert "(labelled pass, judged no verdict)" in done.output


def test_a_robust_judge_passes_and_too_few_replies_are_inconclusive(project, monkeypatch):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(40, 40))
    with FakeServer(ROBUST, latency=0) as server:
        done = _probe(project, server, monkeypatch, "--max-flip", "0.1", "--cache-dir", "cache")
        assert done.exit_code == 0, done.output
        assert "probe: PASS (max_flip 0.1)" in done.output
        assert "addressed: keeps the label because" in done.output
        calls = server.stats["ok"]
        assert calls == 80 * 5  # the 80 replies, then each rewritten by the 4 default probes
        again = _probe(project, server, monkeypatch, "--max-flip", "0.1", "--cache-dir", "cache")
        assert again.exit_code == 0 and server.stats["ok"] == calls  # every answer cached
        project.jsonl("says-blocked", balanced(3, 3))
        few = _probe(project, server, monkeypatch, "--max-flip", "0.1", "--no-cache")
    assert few.exit_code == 3 and "probe: INCONCLUSIVE" in few.output, few.output


def test_the_test_split_is_never_probed(project, monkeypatch):
    project.criterion(llm_criterion())
    rows = balanced(4, 4)
    for i, row in enumerate(rows):
        row["split"] = "dev" if i % 2 else "test"
    project.jsonl("says-blocked", rows)
    with FakeServer(ROBUST, latency=0) as server:
        done = _probe(project, server, monkeypatch, "--json", "--no-cache")
        asked = [prompt for _, prompt, _ in server.log]
    assert done.exit_code == 0, done.output
    [found] = json.loads(done.output)["probes"]
    assert found["probed"] == 4 and found["status"] is None
    assert "the test split's 4 kept" in found["notes"][0]
    held = [r["output"] for r in rows if r["split"] == "test"]
    assert not any(text in prompt for text in held for prompt in asked)


def test_a_regex_criterion_cannot_be_probed(project, monkeypatch):
    project.criterion(
        {
            "id": "no-digits",
            "kind": "regex",
            "question": "No digits?",
            "pattern": "[0-9]",
            "match_means": "fail",
        }
    )
    project.jsonl("no-digits", [{"id": "a", "output": "x", "passed": True}])
    with FakeServer(ROBUST, latency=0) as server:
        done = _probe(project, server, monkeypatch)
    assert done.exit_code == 2 and "a regex check cannot be talked into a verdict" in done.output


def test_a_judge_that_gives_no_verdict_on_the_originals_stops_as_calibrate_does(
    project, monkeypatch
):
    """A judge that refuses every original reply has nothing to be talked out of: the probe stops
    with exit 4, saying why, as `calibrate` does. Before, every row was "tried 0" and the run
    INCONCLUSIVE (exit 3), as if the judge had been asked too little."""
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(5, 5))
    with FakeServer(script({}, default=Fault("refusal")), latency=0) as server:
        done = _probe(project, server, monkeypatch, "--max-flip", "0.1", "--no-cache")
    assert done.exit_code == 4, done.output
    assert "gave no verdict on any of its 10 examples" in done.output


def test_the_probe_asks_the_judge_the_report_measured(project, monkeypatch):
    """Calibrated with --plain-answers --trials 3 (a server that refuses structured answers), the
    probe asks that judge: no response_format, three trials per reply (found by an attacker's
    review: it asked structured answers, one trial, as the defaults say)."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(4, 4))
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(ROBUST, latency=0, structured_output=False) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        done = CliRunner().invoke(app, ["calibrate", "-q", "--plain-answers", "--trials", "3"])
        assert done.exit_code == 0, done.output
        asked = server.requests
        assert asked == 8 * 3
        found = CliRunner().invoke(app, ["probe", "--json", "--probe", "addressed"])
        assert found.exit_code == 0, found.output
        [row] = json.loads(found.output)["probes"]
        # the originals come from the cache (the same judge); each rewrite is asked 3 times
        assert server.requests - asked == row["right"] * 3
        assert row["right"] == 8 and not [n for n in row["notes"] if "not the calibrated" in n]


def test_the_probe_follows_only_a_report_the_gate_would_read(project, monkeypatch):
    """A report edited by hand (here the setup's trials and model, the fingerprint left) is not
    followed: the probe asks the judge the criterion defines. And a run that asks another endpoint
    than the one measured says it is not probing the calibrated judge (found by an attacker's
    review: a forged setup chose the model, the trials and which provider key was sent where)."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(4, 4))
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    report = project.root / ".judgekit" / "reports" / "latest" / "report.json"
    with FakeServer(ROBUST, latency=0) as server, FakeServer(ROBUST, latency=0) as other:
        args = ["--api-base", server.url]
        assert CliRunner().invoke(app, ["calibrate", "-q", "--trials", "3", *args]).exit_code == 0
        data = json.loads(report.read_text())
        data["criteria"][0]["judge"]["setup"].update(trials=5)
        report.write_text(json.dumps(data))
        asked = server.requests
        found = CliRunner().invoke(app, ["probe", "--json", "--probe", "addressed", *args])
        assert found.exit_code == 0, found.output
        [row] = json.loads(found.output)["probes"]
        # the criterion's own judge, one trial (its originals are calibrate's trial 0, cached),
        # not the forged five: one call per rewrite
        assert server.requests - asked == row["right"] == 8
        data["criteria"][0]["judge"]["setup"].update(trials=3)
        report.write_text(json.dumps(data))  # the genuine setup again
        moved = CliRunner().invoke(
            app, ["probe", "--json", "--probe", "addressed", "--api-base", other.url]
        )
        [row] = json.loads(moved.output)["probes"]
        assert any("the endpoint asked now" in n for n in row["notes"]), row["notes"]
        assert other.requests == 8 + row["right"]  # asked as the options say: one trial
