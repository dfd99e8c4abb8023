"""Unreadable answers are asked again (retry.unreadable, default once), past the cache, in
calibration, claims checks and the Judge a test calls alike; refusals never; re-asks are counted."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import diskcache
import pytest

from judgekit.inputs.criteria import ClaimsCriterion, LLMCriterion
from judgekit.judging.answers import readable
from judgekit.judging.judge import Judge
from judgekit.judging.setup import JudgeSetup
from judgekit.llm.cache import CachedLLM, cache_key
from judgekit.llm.protocol import Completion, Request
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.testing import GARBAGE_TEXT, MALFORMED_TEXT, REFUSAL_TEXT, FakeLLM, FakeServer, script
from tests.conftest import balanced, llm_criterion

FAST = RetryPolicy(attempts=3, base_s=0.01, cap_s=0.05, first_contact_attempts=2, down_after=3)
VERDICTS = script({"reply-p": True, "reply-f": False})
PASS = json.dumps({"reasoning": "it says so", "passed": True})


@pytest.fixture
def setup(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(4, 4))
    return project


def options(project, server, **extra):
    values = dict(
        criteria_dir=project.criteria,
        sets_dir=project.sets,
        model="openai/judge",
        api_base=server.url,
        cache_dir=project.root / "cache",
        retry=FAST,
        concurrency=4,
        timeout_s=5,
    )
    return Options(**{**values, **extra})


def asked(server, example):
    return [outcome for _, prompt, outcome in server.log if f"reply-{example}:" in prompt]


@pytest.mark.parametrize("via", ["auto", "litellm"])
@pytest.mark.parametrize("fault", ["garbage", "malformed_json"])
def test_an_unreadable_answer_is_asked_again_and_counted(setup, fault, via):
    with FakeServer(VERDICTS, fail_first={"reply-p1:": [fault], "reply-f1:": [fault, fault]}) as s:
        report = measure(options(setup, s, via=via))
    c = report.criteria[0]
    # p1: a glitch, asked again, decided right; f1: unreadable twice, an abstention keeping
    # the last answer.
    assert asked(s, "p1") == [fault, "ok"] and asked(s, "f1") == [fault, fault]
    assert c.outcomes["p1"] == (True, True) and c.abstained == 1
    (d,) = c.disagreements
    assert (d.id, d.abstention, d.raw) == (
        "f1",
        "unparseable",
        {"garbage": GARBAGE_TEXT, "malformed_json": MALFORMED_TEXT}[fault],
    )
    assert s.requests == 10 and (c.usage.calls, c.usage.cached, c.usage.reasked) == (10, 0, 2)


def test_how_often_is_the_policy_s_or_the_criterion_s(setup):
    with FakeServer(VERDICTS, fail_first={"reply-p1:": ["garbage", "garbage"]}) as s:
        twice = measure(
            options(setup, s, retry=replace(FAST, unreadable=2), cache_dir=None)
        ).criteria[0]
        assert (
            asked(s, "p1") == ["garbage", "garbage", "ok"]
            and twice.abstained == 0
            and twice.usage.reasked == 2
        )
    setup.criterion(llm_criterion(judge={"reask_unreadable": 0}))  # the criterion's setting wins
    with FakeServer(VERDICTS, fail_first={"reply-p1:": ["garbage"]}) as s:
        never = measure(
            options(setup, s, retry=replace(FAST, unreadable=2), cache_dir=None)
        ).criteria[0]
        assert asked(s, "p1") == ["garbage"] and never.abstained == 1 and never.usage.reasked == 0


def test_a_reask_is_not_served_from_the_cache_and_replaces_only_with_a_readable_answer(setup):
    def stored():
        with diskcache.Cache(str(setup.root / "cache")) as store:
            return [json.loads(store[k])["text"] for k in store.iterkeys()]

    with FakeServer(VERDICTS, fail_first={"reply-p2:": ["garbage"]}) as s:
        # the garbage answer is cached
        measure(options(setup, s, retry=replace(FAST, unreadable=0)))
        assert GARBAGE_TEXT in stored() and s.requests == 8
        s.fail_first["reply-p2:"] = ["malformed_json"]
        still = measure(options(setup, s)).criteria[0]
        # The cached garbage was asked again (the one request); the unreadable re-ask did
        # not replace it.
        assert asked(s, "p2") == ["garbage", "malformed_json"] and s.requests == 9
        assert still.abstained == 1 and still.disagreements[0].raw == MALFORMED_TEXT
        assert (still.usage.calls, still.usage.cached, still.usage.reasked) == (1, 8, 1)
        assert GARBAGE_TEXT in stored() and MALFORMED_TEXT not in stored()
        fixed = measure(options(setup, s)).criteria[0]
        assert s.requests == 10 and fixed.abstained == 0 and fixed.outcomes["p2"] == (True, True)
        # replaced in place: the same key
        assert GARBAGE_TEXT not in stored() and len(stored()) == 8
        again = measure(options(setup, s)).criteria[0]
        assert s.requests == 10 and (
            again.usage.calls,
            again.usage.cached,
            again.usage.reasked,
        ) == (0, 8, 0)


def test_the_cache_key_of_an_ordinary_call_is_unchanged_and_a_reask_shares_it():
    request = Request(
        model="openai/judge",
        messages=[{"role": "user", "content": "Is it blocked?"}],
        trial=1,
        endpoint="http://127.0.0.1:8000/v1",
    )
    # The key judgekit 0.x gave this request before re-asks existed: caches written then stay valid.
    assert cache_key(request) == "2c3c2a71f800f2fb105468da51ee559c25ae34208aaffb9d4a605529e8e48a70"
    assert cache_key(replace(request, keep_if=readable)) == cache_key(request)


def test_the_cache_layer_on_its_own(tmp_path):
    answers = iter([GARBAGE_TEXT, MALFORMED_TEXT, PASS])
    fake = FakeLLM(lambda r: next(answers))
    llm = CachedLLM(fake, tmp_path)
    request = Request(model="m", messages=[{"role": "user", "content": "x"}])
    run = asyncio.run
    assert run(llm.complete(request)).text == GARBAGE_TEXT
    assert run(llm.complete(request)).cached  # an ordinary call is served from the cache
    reask = replace(request, keep_if=readable)
    assert (
        run(llm.complete(reask)).text == MALFORMED_TEXT and llm.lookup(request).text == GARBAGE_TEXT
    )
    assert run(llm.complete(reask)).text == PASS and llm.lookup(request).text == PASS
    assert fake.calls == 3


def test_a_refusal_is_an_answer_never_asked_again():
    fake = FakeLLM(lambda r: REFUSAL_TEXT)
    verdict = Judge(LLMCriterion(id="c", question="Is it polite?", judge={"model": "m"}), llm=fake)(
        "Hello."
    )
    assert verdict.abstention == "refusal" and fake.calls == 1 and verdict.usage.reasked == 0
    flagged = FakeLLM(lambda r: Completion(text="", refusal="policy"))
    assert (
        Judge(LLMCriterion(id="c", question="Is it polite?", judge={"model": "m"}), llm=flagged)(
            "Hi"
        ).abstention
        == "refusal"
        and flagged.calls == 1
    )


def test_the_judge_a_test_calls_asks_again_as_calibration_does():
    answers = iter([GARBAGE_TEXT, PASS])
    fake = FakeLLM(lambda r: next(answers))
    verdict = Judge(LLMCriterion(id="c", question="Is it polite?", judge={"model": "m"}), llm=fake)(
        "Hello."
    )
    assert verdict.passed is True and fake.calls == 2 and verdict.usage.reasked == 1
    assert (
        fake.requests[1].keep_if is not None
        and fake.requests[1].messages == fake.requests[0].messages
    )
    once = FakeLLM(lambda r: GARBAGE_TEXT)
    criterion = LLMCriterion(
        id="c", question="Is it polite?", judge={"model": "m", "reask_unreadable": 0}
    )
    assert Judge(criterion, llm=once)("Hello.").abstention == "unparseable" and once.calls == 1


def test_the_judge_through_the_real_stack_keeps_the_readable_answer(tmp_path, monkeypatch):
    with FakeServer(VERDICTS, fail_first={"reply-p0:": ["garbage"]}) as s:
        # the environment names the calibrated endpoint
        monkeypatch.setenv("OPENAI_BASE_URL", s.url)
        criterion = LLMCriterion(id="c", question="Is it blocked?")
        # as the gate hands it to the fixture
        calibrated = JudgeSetup("llm", model="openai/j", endpoint=s.url)
        judge = Judge(criterion, calibrated, cache_dir=str(tmp_path / "cache"))
        assert judge("reply-p0: blocked").passed is True and s.requests == 2
        # the readable answer, cached
        assert judge("reply-p0: blocked").passed is True and s.requests == 2


CLAIM = json.dumps({"claims": ["Paris is in France"]})
CHECKED = json.dumps({"results": [{"claim": 1, "evidence": "Paris, France", "supported": True}]})


@pytest.mark.parametrize("step", ["extraction", "verification"])
def test_an_unreadable_claims_step_is_asked_again(step):
    glitched = {
        "extraction": iter([GARBAGE_TEXT, CLAIM, CHECKED]),
        "verification": iter([CLAIM, MALFORMED_TEXT, CHECKED]),
    }
    fake = FakeLLM(lambda r: next(glitched[step]))
    criterion = ClaimsCriterion(id="g", kind="claims", question="Supported?", judge={"model": "m"})
    verdict = Judge(criterion, llm=fake)("Paris is in France.", context="Paris, France.")
    assert verdict.passed is True and fake.calls == 3 and verdict.usage.reasked == 1
    again = {"extraction": 1, "verification": 2}[step]
    assert (
        fake.requests[again].keep_if is not None
        and fake.requests[again].messages == fake.requests[again - 1].messages
    )


def test_a_claims_step_that_stays_unreadable_or_refuses_abstains():
    fake = FakeLLM(lambda r: GARBAGE_TEXT)
    criterion = ClaimsCriterion(id="g", kind="claims", question="Supported?", judge={"model": "m"})
    verdict = Judge(criterion, llm=fake)("Paris is in France.", context="Paris, France.")
    assert verdict.abstention == "unparseable extraction" and fake.calls == 2
    refusing = FakeLLM(lambda r: REFUSAL_TEXT)
    assert (
        Judge(criterion, llm=refusing)("Paris.", context="Paris.").passed is None
        and refusing.calls == 1
    )
