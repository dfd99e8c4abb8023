import asyncio

import pytest

from judgekit.inputs.criteria import LLMCriterion
from judgekit.inputs.sets import Example
from judgekit.judging.answers import read_answer
from judgekit.judging.jobs import jobs_for, run_bounded
from judgekit.judging.verdicts import Verdict, majority


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"reasoning": "r", "passed": true}', (True, "r", None)),
        ('{"reasoning": "r", "passed": false}', (False, "r", None)),
        ('Sure:\n```json\n{"reasoning": "r", "passed": false}\n```', (False, "r", None)),
        ('Here you go {"passed": true, "reasoning": "x"} done', (True, "x", None)),
        ("It never says so.\nFAIL", (False, "It never says so.", None)),
        ("Clearly stated.\n**PASS**", (True, "Clearly stated.", None)),
        ("PASS", (True, None, None)),
        # a small model breaks its reasoning's line inside the JSON string, unescaped
        (
            '{"reasoning": "It says so.\nTwice.", "passed": true}',
            (True, "It says so.\nTwice.", None),
        ),
        ('```json\n{"reasoning": "a\tb", "passed": false}\n```', (False, "a\tb", None)),
    ],
)
def test_contract_answers(text, expected):
    assert read_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "maybe",
        "PASS or FAIL, hard to say",
        '{"reasoning": "r", "passed": "true"}',
        '{"reasoning": "r", "passed": tru',
        "The verdict is PASS because",
        '{"passed": 1}',
        "pass\nfail?",
    ],
)
def test_everything_else_abstains_with_the_raw_text_kept(text):
    passed, _, abstention = read_answer(text)
    assert passed is None and abstention == "unparseable"


def test_refusals_are_their_own_abstention():
    assert read_answer("I'm sorry, but I can't help with that.")[2] == "refusal"
    assert read_answer("", refusal="policy")[0:3:2] == (None, "refusal")


def test_trials_make_one_job_each_and_differ_in_the_request():
    c = LLMCriterion(id="c", question="Is it polite?")
    jobs = jobs_for(c, [Example(id="a", output="hi", passed=True)], "m", trials=3)
    assert [j.request.trial for j in jobs] == [0, 1, 2]
    assert len({j.request.key_data()["trial"] for j in jobs}) == 3


def test_majority_and_tie():
    assert (
        majority(
            [Verdict("a", True), Verdict("a", None, trial=1), Verdict("a", False, trial=2)]
        ).abstention
        == "trials tied"
    )
    assert majority([Verdict("a", None, abstention="unparseable")]).abstention == "unparseable"
    assert (
        majority(
            [Verdict("a", False), Verdict("a", False, trial=1), Verdict("a", True, trial=2)]
        ).passed
        is False
    )


def test_run_bounded_keeps_order_and_bound():
    in_flight = peak = 0

    async def work(x):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001 * (x % 5))
        in_flight -= 1
        return x * 2

    assert asyncio.run(run_bounded(list(range(100)), work, concurrency=7)) == [
        x * 2 for x in range(100)
    ]
    assert peak == 7


def test_run_bounded_propagates_the_first_error():
    async def work(x):
        if x == 3:
            raise KeyError("stop")
        await asyncio.sleep(0.01)
        return x

    with pytest.raises(KeyError):
        asyncio.run(run_bounded(list(range(50)), work, concurrency=4))
