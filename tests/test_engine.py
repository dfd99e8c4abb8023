"""The live judge path over a fake OpenAI-compatible server: faults, retries, early
stops, cache, trials."""

import json
import time
from dataclasses import replace

import pytest

from judgekit.errors import ProviderAuthError, ProviderUnreachable
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion

FAST = RetryPolicy(attempts=4, base_s=0.01, cap_s=0.05, first_contact_attempts=2, down_after=3)
VERDICTS = script({"reply-p": True, "reply-f": False})


@pytest.fixture
def setup(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(4, 4))
    return project


def options(project, server, via="auto", **extra):
    values = dict(
        criteria_dir=project.criteria,
        sets_dir=project.sets,
        model="openai/judge",
        api_base=server.url,
        cache_dir=project.root / "cache",
        retry=FAST,
        concurrency=4,
        via=via,
        timeout_s=5,
    )
    values.update(extra)
    return Options(**values)


def by_id(report):
    c = report.criteria[0]
    return c, {d.id: d for d in c.disagreements}


@pytest.mark.parametrize("via", ["auto", "litellm"])
@pytest.mark.parametrize("fault", ["rate_limit", "server_error", "reset", "truncated"])
def test_transient_faults_are_retried_to_the_right_verdict(setup, via, fault):
    with FakeServer(
        VERDICTS, fail_first={"reply-p1:": [fault], "reply-f2:": [fault, fault]}, retry_after=0.05
    ) as s:
        report = measure(options(setup, s, via))
    c, wrong = by_id(report)
    assert wrong == {} and c.abstained == 0
    assert (c.confusion.tp, c.confusion.tn) == (4, 4)
    assert s.stats[fault] == 3 and s.stats["ok"] == 8


@pytest.mark.parametrize("via", ["auto", "litellm"])
@pytest.mark.parametrize(
    "fault, cause",
    [("garbage", "unparseable"), ("malformed_json", "unparseable"), ("refusal", "refusal")],
)
def test_bad_answers_abstain_and_are_never_counted(setup, via, fault, cause):
    # Bad twice: an unreadable answer is asked once more (retry.unreadable), a refusal never.
    with FakeServer(VERDICTS, fail_first={"reply-p1:": [fault] * 2, "reply-f1:": [fault] * 2}) as s:
        report = measure(options(setup, s, via))
    c, wrong = by_id(report)
    assert (
        c.abstained == 2
        and c.confusion.tp + c.confusion.fn == 3
        and c.confusion.tn + c.confusion.fp == 3
    )
    assert {k: (d.verdict, d.abstention) for k, d in wrong.items()} == {
        "p1": (None, cause),
        "f1": (None, cause),
    }
    reasked = 0 if fault == "refusal" else 2
    assert s.requests == 8 + reasked and (c.usage.calls, c.usage.reasked) == (8 + reasked, reasked)


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_exhausted_retries_end_as_abstention_and_the_run_goes_on(setup, via):
    with FakeServer(
        VERDICTS, fail_first={"reply-p0:": ["server_error"] * 10, "reply-f0:": ["hang"] * 10}
    ) as s:
        report = measure(options(setup, s, via, timeout_s=0.3))
    c, wrong = by_id(report)
    assert wrong["p0"].abstention == "error: server" and "500" in wrong["p0"].reason
    assert wrong["f0"].abstention == "error: timeout"
    assert (
        c.abstained == 2 and c.confusion.tp + c.confusion.fp + c.confusion.tn + c.confusion.fn == 6
    )


def test_retry_after_is_honoured(setup):
    with FakeServer(VERDICTS, fail_first={"reply-p1:": ["rate_limit"]}, retry_after=0.6) as s:
        measure(options(setup, s))
    times = [t for t, prompt, _ in s.log if "reply-p1:" in prompt]
    assert len(times) == 2 and times[1] - times[0] >= 0.6


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_provider_down_stops_early_with_one_message(setup, via):
    server = FakeServer(VERDICTS).start()
    server.stop()  # nothing listens on that port now
    started = time.monotonic()
    with pytest.raises(ProviderUnreachable, match="could not be reached"):
        measure(options(setup, server, via))
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_bad_key_stops_at_once(setup, via, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-sentinel-0123456789abcdef")
    with (
        FakeServer(VERDICTS, faults={"auth": 1.0}) as s,
        pytest.raises(ProviderAuthError) as caught,
    ):
        measure(options(setup, s, via))
    assert s.requests <= 4  # one per call in flight, no retries
    assert "sentinel-0123456789abcdef" not in str(caught.value)


def test_cache_serves_a_rerun_and_stores_only_successes(setup):
    # an unreadable answer is final here (tests/test_reask.py: asked again)
    once = replace(FAST, unreadable=0)
    with FakeServer(
        VERDICTS,
        fail_first={"reply-p2:": ["garbage"], "reply-f3:": ["server_error"] * FAST.attempts},
    ) as s:
        first = measure(options(setup, s, retry=once))
        asked = s.requests
        second = measure(options(setup, s, retry=once))
    # The garbage answer was a successful call (cached, still an abstention); the
    # failed call was not cached.
    assert first.criteria[0].abstained == 2
    assert asked == 7 + FAST.attempts and s.requests == asked + 1
    assert second.criteria[0].usage.cached == 7 and second.criteria[0].usage.calls == 1
    assert second.criteria[0].abstained == 1  # the garbage answer, served from the cache


def test_cache_values_are_json_text_without_secrets(setup, monkeypatch):
    import diskcache

    sentinel = "sk-sentinel-key-9f8e7d6c5b4a39281706"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    with FakeServer(VERDICTS, fail_first={"reply-p1:": ["server_error"] * 10}) as s:
        report = measure(
            options(setup, s, api_base=s.url.replace("http://", f"http://user:{sentinel}@"))
        )
    report.write(setup.root / "out")
    for path in (setup.root / "out").iterdir():
        assert sentinel not in path.read_text(), path
    cache = diskcache.Cache(str(setup.root / "cache"))
    values = [cache.get(key) for key in cache.iterkeys()]
    # p1 failed: not cached
    assert len(values) == 7 and all(isinstance(json.loads(v), dict) for v in values)
    for path in (setup.root / "cache").rglob("*"):
        if path.is_file():
            assert sentinel.encode() not in path.read_bytes()


def test_changed_model_or_prompt_misses_the_cache(setup):
    with FakeServer(VERDICTS) as s:
        measure(options(setup, s))
        measure(options(setup, s, model="openai/other-judge"))
        assert s.requests == 16
        setup.criterion(llm_criterion(pass_when="It says blocked."))
        measure(options(setup, s))
        assert s.requests == 24
        measure(options(setup, s))
        assert s.requests == 24


def test_no_cache_asks_again(setup):
    with FakeServer(VERDICTS) as s:
        measure(options(setup, s, cache_dir=None))
        measure(options(setup, s, cache_dir=None))
    assert s.requests == 16 and not (setup.root / "cache").exists()


def test_trials_majority_and_self_consistency(setup):
    flips = iter([True, False, True] * 3)
    answer = script({"reply-f": False})

    def flaky(prompt):
        return next(flips) if "reply-p0:" in prompt else answer(prompt)

    with FakeServer(flaky) as s:
        report = measure(options(setup, s, trials=3, concurrency=1))
    c = report.criteria[0]
    assert s.requests == 24
    assert c.consistency.trials == 3 and c.consistency.unstable == ["p0"]
    assert c.consistency.stability == {"p0": pytest.approx(2 / 3)}
    assert 0.8 < c.consistency.fleiss_kappa < 1
    assert c.consistency.flip_rate == pytest.approx(1 / 8)
    assert c.confusion.tp == 4  # p0 passes 2 of 3 trials
    assert c.judge.parameters["trials"] == 3


def test_usage_is_reported(setup):
    with FakeServer(VERDICTS, latency=0.02) as s:
        report = measure(options(setup, s))
    u = report.criteria[0].usage
    assert u.calls == 8 and u.cached == 0 and u.prompt_tokens > 100 and u.completion_tokens > 0
    assert 0.02 <= u.latency_p50_s <= u.latency_p95_s < 2
    assert u.cost is None  # a fake model has no known price: unknown, not zero


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_structured_output_is_requested_and_dropped_where_unsupported(setup, via):
    with FakeServer(VERDICTS) as s:
        measure(options(setup, s, via))
    with FakeServer(VERDICTS, structured_output=False) as plain:
        report = measure(options(setup, plain, via, cache_dir=None))
    c = report.criteria[0]
    if via == "auto":
        # Asked with a schema only until the first refusal came back (at most
        # one per call in flight).
        assert 1 <= plain.stats["unsupported_response_format"] <= 4
        assert c.abstained == 0 and c.disagreements == []
    else:
        # litellm sends response_format only for models it knows support it;
        # a fake model is not one.
        assert plain.stats["unsupported_response_format"] == 0 and c.abstained == 0


def test_plain_answers_send_no_response_format(setup):
    with FakeServer(VERDICTS, structured_output=False) as s:
        report = measure(options(setup, s, structured=False))
    assert s.stats["unsupported_response_format"] == 0 and report.criteria[0].abstained == 0


def test_provider_down_mid_run_and_back_loses_nothing(setup):
    import threading

    patient = RetryPolicy(attempts=8, base_s=0.2, cap_s=1.0, first_contact_attempts=2, down_after=3)
    with FakeServer(VERDICTS, latency=0.05) as s:
        done = {}
        run = threading.Thread(
            target=lambda: done.update(
                report=measure(options(setup, s, retry=patient, concurrency=2))
            )
        )
        run.start()
        while len(s.log) < 3:
            time.sleep(0.01)
        s.go_down()  # connections refused, those in flight dropped
        time.sleep(0.4)
        back = time.monotonic()
        s.come_back()
        run.join(30)
    assert any(t >= back for t, _, _ in s.log), "the outage did not interrupt the run"
    c = done["report"].criteria[0]
    assert c.abstained == 0 and c.disagreements == [] and c.n == 8


def test_exhausted_retries_say_how_many_attempts(setup):
    with FakeServer(VERDICTS, fail_first={"reply-p0:": ["server_error"] * 10}) as s:
        report = measure(options(setup, s))
    (d,) = [d for d in report.criteria[0].disagreements if d.id == "p0"]
    assert d.reason.endswith(f"(after {FAST.attempts} attempts)")


def test_a_run_where_every_call_failed_is_not_a_calibration(setup, tmp_path):
    """41 of 41 examples lost to HTTP 500s used to exit 0 with a report of abstentions: now exit 4
    with the cause, and nothing written."""
    from click.testing import CliRunner

    from judgekit.cli import app
    from judgekit.errors import CallsFailed

    with FakeServer(VERDICTS, faults={"server_error": 1.0}) as server:
        with pytest.raises(
            CallsFailed, match=r"every call to the judge of criterion 'says-blocked'.*server 500"
        ):
            measure(options(setup, server, cache_dir=None))
        result = CliRunner().invoke(
            app,
            [
                "calibrate",
                "--model",
                "openai/judge",
                "--api-base",
                server.url,
                "--concurrency",
                "2",
                "--timeout",
                "5",
            ],
        )
    assert (
        result.exit_code == 4
        and "every call to the judge" in result.output
        and "server" in result.output
    )
    assert not (setup.root / ".judgekit" / "reports" / "latest" / "report.json").exists()


def test_cached_answers_keep_the_time_they_were_obtained(setup):
    """A re-run served from the cache rests on answers as old as they are; answers older than the
    gate's max_age are asked again."""
    from judgekit.inputs.policy import Policy, Thresholds
    from judgekit.llm.cache import CachedLLM

    with FakeServer(VERDICTS) as server:
        first = measure(options(setup, server)).criteria[0]
        asked = server.requests
        # Age every cached answer by 40 days, as if it had been obtained then.
        store = CachedLLM(None, setup.root / "cache")._cache
        for key in list(store.iterkeys()):
            data = json.loads(store[key])
            store[key] = json.dumps({**data, "obtained_at": data["obtained_at"] - 40 * 86400})
        store.close()
        lenient = Policy(defaults=Thresholds(max_age=None))
        again = measure(options(setup, server, policy=lenient)).criteria[0]
        assert server.requests == asked and again.usage.cached == 8  # served from the cache ...
        assert (first.evidence_at - again.evidence_at).days == 40  # ... and as old as its answers
        assert again.calibrated_at > first.calibrated_at
        fresh = measure(options(setup, server)).criteria[0]  # the default policy: max_age 30d
        assert server.requests == asked + 8 and fresh.evidence_at >= first.evidence_at


def test_answers_cached_through_one_transport_are_not_the_other_s(setup):
    """The transport is part of the judge (its setup): answers cached through the lean OpenAI path
    do not vouch for litellm, which was never asked (found by an attacker's review: the gate then
    passed a litellm judge that litellm had not answered). The default transport's keys stay as
    they were."""
    with FakeServer(VERDICTS) as s:
        measure(options(setup, s))
        asked = s.requests
        measure(options(setup, s))
        assert s.requests == asked  # the default transport's answers are served again
        measure(options(setup, s, via="litellm"))
        assert s.requests == 2 * asked  # litellm was asked, not served the lean path's answers


def test_a_script_that_raises_is_said_not_dropped(setup):
    """A fake server whose script raises answers that request 400 with what it raised (was: the
    connection dropped, retried until the provider looked down, the script's error nowhere)."""

    def answer(prompt: str) -> bool:
        if "reply-p1" in prompt:
            raise KeyError("the script has no entry for reply-p1")
        return VERDICTS(prompt)

    with FakeServer(answer) as server:
        report = measure(options(setup, server))
    assert server.script_errors == [
        "the fake server's script raised KeyError: 'the script has no entry for reply-p1'"
    ]
    # that example abstains, saying why, at once (a rejected request is not retried); the others
    # are judged
    (abstained,) = [d for d in report.criteria[0].disagreements if d.verdict is None]
    assert abstained.id == "p1" and "the fake server's script raised KeyError" in abstained.reason
    assert server.stats["ok"] == 7


def test_a_finding_s_time_is_a_cached_answer_s_floor_not_an_age(tmp_path):
    """A finding made answers older than it stale through an age computed once per run: an
    answer obtained just after the finding was older than that age by the time it was looked up
    under load, and asked again. The finding's time is now the floor itself."""
    import asyncio

    from judgekit.llm.cache import CachedLLM
    from judgekit.llm.protocol import Completion, Request
    from judgekit.testing import FakeLLM

    request = Request(model="openai/j", messages=[{"role": "user", "content": "hi"}])
    asked = FakeLLM.scripted({}, default=True)
    asyncio.run(CachedLLM(asked, tmp_path).complete(request))
    obtained = CachedLLM(asked, tmp_path).lookup(request)
    assert isinstance(obtained, Completion)
    time.sleep(0.05)  # the run's setup, then its lookups, come later than the finding
    after = CachedLLM(asked, tmp_path, not_before=obtained.obtained_at)
    assert after.lookup(request) is not None  # obtained at the floor: served
    before = CachedLLM(asked, tmp_path, not_before=obtained.obtained_at + 1e-3)
    assert before.lookup(request) is None  # obtained before it: asked again
