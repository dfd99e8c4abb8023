"""Claims criteria: extraction, verification, the strict rule, and every fail-closed path — through
an injected fake and through the fake OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.judging.claims import read_checks, read_claims
from judgekit.judging.verdicts import ClaimCheck, aggregate
from judgekit.pipeline import Options, measure
from judgekit.report import Report, to_markdown
from judgekit.testing import Claims, FakeLLM, FakeServer, Fault, block, script

SOURCE = "The Poseidon grossed $181 million worldwide. Its production budget was $160 million."
# Each reply names its claims (a fake extracts what the reply lists after "claims:") and which of
# them the source does not support ("unsupported:"): the fake scripts failures, not intelligence.
EXAMPLES = [
    {"id": "good", "output": "claims: grossed $181 million | budget $160 million", "passed": True},
    {
        "id": "one-bad",
        "output": "claims: grossed $181 million | won an Oscar unsupported: won an Oscar",
        "passed": False,
    },
    {"id": "none", "output": "claims: ", "passed": False},
    {"id": "garbled-extraction", "output": "EXTRACT-GARBAGE", "passed": True},
    {"id": "garbled-verification", "output": "claims: garble me", "passed": True},
]


def claims_of(reply: str) -> list[str]:
    listed = reply.split("claims:", 1)[1].split("unsupported:")[0]
    return [c.strip() for c in listed.split("|") if c.strip()]


def answer(prompt: str) -> str:
    """What a model would say to judgekit's two prompts, scripted by the reply's own text."""
    if "List every factual claim" in prompt:
        reply = block(prompt, "output") or ""
        if "EXTRACT-GARBAGE" in reply:
            return "Sure! Here are some thoughts about the reply."
        return json.dumps({"claims": claims_of(reply)})
    if "garble me" in prompt:  # a verification that leaves its claim undecided
        return '{"results": [{"claim": 7, "supported": true}]}'
    listed = block(prompt, "claims")
    if listed is None:  # one claim per call
        claim = block(prompt, "claim") or ""
        return json.dumps(
            {
                "evidence": "" if "Oscar" in claim else "grossed $181 million",
                "supported": "Oscar" not in claim,
            }
        )
    results = []
    for line in listed.splitlines():
        number, claim = line.split(". ", 1)
        results.append(
            {
                "claim": int(number),
                "evidence": "" if "Oscar" in claim else "from the source",
                "supported": "Oscar" not in claim,
            }
        )
    return json.dumps({"results": results})


def fake() -> FakeLLM:
    return FakeLLM(lambda request: answer(request.messages[-1]["content"]))


@pytest.fixture
def claims_project(project):
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every factual claim in the reply supported by the source?",
            "judge": {"model": "openai/checker"},
        }
    )
    project.jsonl("grounded", [{**e, "context": SOURCE} for e in EXAMPLES])
    return project


def _run(project, llm=None, **options):
    return measure(
        Options(criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None, **options),
        llm=llm or fake(),
    )


def test_strict_rule():
    assert aggregate([ClaimCheck("a", True), ClaimCheck("b", True)], "fail") == (
        True,
        "all 2 claim(s) supported",
    )
    assert aggregate([ClaimCheck("a", True), ClaimCheck("b", False)], "fail")[0] is False
    # a known failure decides
    assert aggregate([ClaimCheck("a", None), ClaimCheck("b", False)], "fail")[0] is False
    # never guessed as a pass
    assert aggregate([ClaimCheck("a", True), ClaimCheck("b", None)], "fail")[0] is None
    assert aggregate([], "fail")[0] is False and aggregate([], "pass")[0] is True


def test_answers_that_do_not_decide_every_claim_are_not_read():
    assert read_claims('{"claims": ["a", " ", "a", "b"]}') == ["a", "b"]
    assert read_claims('{"claims": "a"}') is None and read_claims("no JSON") is None
    ok = (
        '{"results": [{"claim": 2, "supported": false, "evidence": ""}, '
        '{"claim": 1, "supported": true}]}'
    )
    assert [c.supported for c in read_checks(ok, ["x", "y"])] == [True, False]
    for bad in (
        '{"results": [{"claim": 1, "supported": true}]}',  # claim 2 undecided
        '{"results": [{"claim": 1, "supported": true}, {"claim": 1, "supported": true}]}',  # twice
        '{"results": [{"claim": 1, "supported": "yes"}, {"claim": 2, "supported": true}]}',
    ):
        assert read_checks(bad, ["x", "y"]) is None


def test_each_path_ends_in_a_verdict_or_an_explicit_abstention(claims_project):
    report = _run(claims_project)
    c = report.criteria[0]
    verdicts = {v.id: v for v in c.verdicts}
    assert verdicts["good"].passed is True and verdicts["good"].reason == "all 2 claim(s) supported"
    assert (
        verdicts["one-bad"].passed is False
        and verdicts["one-bad"].reason == "claim 2 not supported: won an Oscar"
    )
    assert (
        verdicts["none"].passed is False
        and verdicts["none"].reason == "no factual claim found in the reply"
    )
    assert (
        verdicts["garbled-extraction"].passed is None
        and "unparseable extraction" in verdicts["garbled-extraction"].reason
    )
    assert verdicts["garbled-verification"].passed is None
    assert "unparseable verification" in verdicts["garbled-verification"].reason
    assert (c.n, c.abstained, c.confusion.tp, c.confusion.tn) == (5, 2, 1, 2)
    # The claim-level detail reaches the report: which claim failed, with the evidence quoted.
    (bad,) = [d for d in c.disagreements if d.id == "garbled-verification"]
    assert [cl.claim for cl in bad.claims] == ["garble me"] and bad.claims[0].supported is None
    good_claims = verdicts["good"].claims
    assert [(cl.claim, cl.supported, cl.evidence) for cl in good_claims] == [
        ("grossed $181 million", True, "from the source"),
        ("budget $160 million", True, "from the source"),
    ]
    markdown = to_markdown(report)
    assert "Claims of these examples" in markdown and "1. ? garble me" in markdown


def test_answers_without_claims_pass_only_when_the_criterion_says_so(claims_project):
    claims_project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported?",
            "no_claims": "pass",
            "judge": {"model": "openai/checker"},
        }
    )
    verdicts = {v.id: v for v in _run(claims_project).criteria[0].verdicts}
    assert verdicts["none"].passed is True


def test_one_call_per_claim_when_not_batched(claims_project):
    claims_project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported?",
            "batch": False,
            "judge": {"model": "openai/checker"},
        }
    )
    llm = fake()
    c = _run(claims_project, llm).criteria[0]
    assert {v.id: v.passed for v in c.verdicts}["one-bad"] is False
    # 5 extractions; verifications: good 2 + one-bad 2 + garbled-verification 1; each unreadable
    # answer (garbled-extraction's extraction, garbled-verification's verification) asked once more
    assert len(llm.requests) == 5 + 2 + 2 + 1 + 2


def test_a_missing_context_is_an_input_error_naming_the_example(project):
    project.criterion({"id": "grounded", "kind": "claims", "question": "Is every claim supported?"})
    project.jsonl(
        "grounded",
        [
            {"id": "a", "output": "x", "context": "src", "passed": True},
            {"id": "b", "output": "y", "passed": False},
        ],
    )
    with pytest.raises(InputError, match=r"grounded.jsonl:id b: has no context"):
        _run(project, model="openai/checker")


def test_a_custom_prompt_is_refused_for_claims(project):
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Supported?",
            "judge": {"prompt": "{{output}}"},
        }
    )
    project.jsonl("grounded", [{"id": "a", "output": "x", "context": "s", "passed": True}])
    with pytest.raises(
        InputError, match=r"grounded.yaml:judge: .*judgekit's extraction and verification prompts"
    ):
        _run(project)


def test_through_the_fake_server_with_cache_resume_and_usage(claims_project, tmp_path):
    with FakeServer(answer) as server:
        options = dict(api_base=server.url, cache_dir=tmp_path / "cache")
        first = measure(
            Options(
                criteria_dir=claims_project.criteria,
                sets_dir=claims_project.sets,
                model="openai/checker",
                **options,
            )
        ).criteria[0]
        calls = server.requests
        second = measure(
            Options(
                criteria_dir=claims_project.criteria,
                sets_dir=claims_project.sets,
                model="openai/checker",
                **options,
            )
        ).criteria[0]
        # Every step of every example came from the cache, but the two
        # unreadable answers: asked again.
        assert server.requests == calls + 2
    # 5 extractions, 3 batched verifications (none and garbled-extraction need none), 2 re-asks
    assert calls == 5 + 3 + 2
    assert first.confusion == second.confusion and first.abstained == second.abstained == 2
    assert (first.usage.calls, first.usage.cached, second.usage.calls, second.usage.cached) == (
        10,
        0,
        2,
        8,
    )
    assert first.usage.reasked == second.usage.reasked == 2


def test_recorded_per_claim_verdicts_are_aggregated_by_the_strict_rule(claims_project, tmp_path):
    records = [
        {
            "id": "good",
            "claims": [{"claim": "a", "supported": True}, {"claim": "b", "supported": True}],
        },
        {
            "id": "one-bad",
            "claims": [{"claim": "a", "supported": True}, {"claim": "b", "supported": False}],
        },
        {"id": "none", "claims": []},
        {"id": "garbled-extraction", "passed": None},
        {"id": "garbled-verification", "claims": [{"claim": "a", "supported": None}]},
    ]
    path = tmp_path / "recorded.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(
        app,
        [
            "calibrate",
            "--criteria",
            str(claims_project.criteria),
            "--sets",
            str(claims_project.sets),
            "--verdicts",
            str(path),
            "--out",
            str(tmp_path / "out"),
            "--no-history",
        ],
    )
    assert result.exit_code == 0, result.output
    c = json.loads((tmp_path / "out" / "report.json").read_text())["criteria"][0]
    assert c["confusion"] == {"tp": 1, "fp": 0, "tn": 2, "fn": 0} and c["abstained"] == 2
    # The verdicts file keeps the claims and reads back the same.
    again = CliRunner().invoke(
        app,
        [
            "calibrate",
            "--criteria",
            str(claims_project.criteria),
            "--sets",
            str(claims_project.sets),
            "--verdicts",
            str(tmp_path / "out" / "verdicts.jsonl"),
            "--out",
            str(tmp_path / "again"),
            "--no-history",
        ],
    )
    assert again.exit_code == 0, again.output
    assert (
        json.loads((tmp_path / "again" / "report.json").read_text())["criteria"][0]["confusion"]
        == c["confusion"]
    )


def test_claim_level_labels_split_the_errors_between_extraction_and_verification(project):
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported?",
            "judge": {"model": "openai/checker"},
        }
    )
    grossed, budget, oscar = "grossed $181 million", "budget $160 million", "won an Oscar"
    project.jsonl(
        "grounded",
        [
            {
                "id": "right",
                "output": f"claims: {grossed} | {budget}",
                "context": SOURCE,
                "passed": True,
                "claims": [
                    {"claim": grossed, "supported": True},
                    {"claim": budget, "supported": True},
                ],
            },
            # The reply also claims an Oscar, but extraction misses it: the
            # labelled claims catch it.
            {
                "id": "missed",
                "output": f"claims: {grossed}",
                "context": SOURCE,
                "passed": False,
                "claims": [
                    {"claim": grossed, "supported": True},
                    {"claim": oscar, "supported": False},
                ],
            },
            # The person found the Oscar in the source; the verifier does not: wrong either way.
            {
                "id": "misread",
                "output": f"claims: {oscar}",
                "context": SOURCE + " It won an Oscar.",
                "passed": True,
                "claims": [{"claim": oscar, "supported": True}],
            },
            {"id": "unlabelled", "output": f"claims: {budget}", "context": SOURCE, "passed": True},
        ],
    )
    llm = fake()
    c = _run(project, llm).criteria[0]
    g = c.claim_stages
    assert (g.examples, g.claims, g.extraction_errors, g.verification_errors) == (3, 5, 1, 1)
    assert g.verification.model_dump() == {"tp": 3, "fp": 0, "tn": 1, "fn": 1}
    assert g.verification_tpr == 0.75 and g.verification_tnr == 1.0
    # extractions, verifications, verifications of the labelled claims
    assert len(llm.requests) == 4 + 4 + 3
    assert "wrong verdicts from extraction 1, from verification 1" in to_markdown(
        Report(criteria=[c])
    )


def test_review_fixes_for_claims(claims_project, tmp_path):
    # Trials: the majority keeps the claims of a trial on its side, so the report still shows them.
    c = _run(claims_project, trials=3).criteria[0]
    (bad,) = [d for d in c.disagreements if d.id == "garbled-verification"]
    assert bad.claims is not None
    # A verification call that fails after its retries: an abstention that keeps the
    # usage of every call made.
    from judgekit.llm.protocol import CallError

    def failing(request):
        text = request.messages[-1]["content"]
        if "grossed" in text and "Claims:" in text:
            return CallError("server", "HTTP 500")
        return answer(text)

    c = _run(claims_project, FakeLLM(failing)).criteria[0]
    verdicts = {v.id: v for v in c.verdicts}
    assert verdicts["good"].passed is None and "(error: server)" in verdicts["good"].reason
    # 5 extractions, 3 verifications that failed (every source names the gross), 1
    # unreadable extraction asked again
    assert (c.usage.calls, c.usage.reasked) == (5 + 3 + 1, 1)
    # A recorded verdict contradicting its own claims, or claims for a criterion
    # of another kind: refused.
    path = tmp_path / "v.jsonl"
    path.write_text(
        json.dumps({"id": "good", "passed": True, "claims": [{"claim": "a", "supported": False}]})
        + "\n"
    )
    with pytest.raises(InputError, match="passed is true but its claims say false"):
        _run(claims_project, verdicts=path)
    claims_project.criterion({"id": "plain", "question": "Does it say so?"})
    claims_project.jsonl("plain", [{"id": "a", "output": "x", "passed": True}])
    path.write_text(json.dumps({"id": "a", "criterion": "plain", "claims": []}) + "\n")
    with pytest.raises(
        InputError, match="gives claims, but criterion 'plain' is not a claims criterion"
    ):
        _run(claims_project, verdicts=path, criterion_ids=["plain"])


def test_labelled_claims_with_early_stopping_and_in_usage(project):
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported?",
            "judge": {"model": "openai/checker"},
        }
    )
    rows = [
        {
            "id": f"g{i}",
            "output": "claims: grossed $181 million",
            "context": SOURCE,
            "passed": True,
            "claims": [{"claim": "grossed $181 million", "supported": True}],
        }
        for i in range(25)
    ]
    rows += [
        {
            "id": f"b{i}",
            "output": "claims: won an Oscar",
            "context": SOURCE,
            "passed": False,
            "claims": [{"claim": "won an Oscar", "supported": False}],
        }
        for i in range(25)
    ]
    project.jsonl("grounded", rows)
    llm = fake()
    c = _run(project, llm, stop_early=True).criteria[0]
    assert c.early_stop is not None and c.claim_stages is not None
    # the labelled claims of the judged examples
    assert c.claim_stages.examples == c.early_stop.judged
    assert c.usage.calls == len(llm.requests)  # every call made, the labelled claims' too
    bad = [{**rows[0], "passed": False}]
    project.jsonl("grounded", bad)
    with pytest.raises(InputError, match="passed is False but its labelled claims say True"):
        _run(project, llm)


def test_recorded_verdicts_that_contradict_their_claims_are_refused(claims_project, tmp_path):
    """`passed` beside claims must be what the strict rule says: a pass with no claim under
    no_claims: fail, or null beside claims that settle the verdict, are contradictions."""
    path = tmp_path / "v.jsonl"
    others = [{"id": e["id"], "passed": e["passed"]} for e in EXAMPLES[1:]]
    for record, words in (
        ({"id": "good", "passed": True, "claims": []}, "passed is true but its claims say false"),
        (
            {"id": "good", "passed": None, "claims": [{"claim": "a", "supported": True}]},
            "passed is null but its claims say true",
        ),
    ):
        path.write_text("".join(json.dumps(r) + "\n" for r in [record, *others]))
        with pytest.raises(InputError, match=words) as caught:
            _run(claims_project, verdicts=path)
        assert ":id good:" in str(caught.value)


def test_claim_stages_from_recorded_per_claim_verdicts(project, tmp_path):
    """Examples with claim-level labels and recorded per-claim verdicts (as WiCE's): the report
    tells extraction errors from verification errors without any model call."""
    project.criterion({"id": "grounded", "kind": "claims", "question": "Is every claim supported?"})
    labelled = [
        {"claim": "It grossed $181 million.", "supported": True},
        {"claim": "It won an Oscar.", "supported": False},
    ]
    project.jsonl(
        "grounded",
        [
            {"id": "a", "output": "x", "context": SOURCE, "passed": False, "claims": labelled},
            {"id": "b", "output": "y", "context": SOURCE, "passed": True, "claims": labelled[:1]},
            {"id": "c", "output": "z", "context": SOURCE, "passed": False, "claims": labelled[1:]},
        ],
    )
    path = tmp_path / "v.jsonl"
    path.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                # a: both claims found; the Oscar verified as supported: a verification error.
                {
                    "id": "a",
                    "claims": [
                        {"claim": "it grossed  $181 million.", "supported": True},
                        {"claim": "It won an Oscar.", "supported": True},
                    ],
                },
                # b: right.
                {"id": "b", "claims": [{"claim": "It grossed $181 million.", "supported": True}]},
                # c: the Oscar claim was never extracted, so how this judge verifies it is
                # unknown: not attributed.
                {"id": "c", "claims": [{"claim": "It is a film.", "supported": True}]},
            ]
        )
    )
    c = _run(project, verdicts=path).criteria[0]
    g = c.claim_stages
    assert (g.examples, g.claims, g.verification.tp, g.verification.fp) == (2, 3, 2, 1)
    # c's labelled claim is not among its recorded ones
    assert (g.verification_errors, g.unreadable) == (
        1,
        1,
    )
    assert c.usage is None or c.usage.calls == 0


def test_a_claims_check_faked_with_pass_fail_verdicts_exits_4_not_a_report_of_abstentions(
    claims_project, monkeypatch
):
    """A claims criterion calibrated against a judge whose every answer is no list of claims
    abstains on every example: the extraction step's answer is not a list of claims. That used to
    exit 0 with a report of 100% abstentions; now the run stops with exit 4 saying why, and
    nothing is written."""
    from judgekit.errors import NoVerdicts

    with FakeServer(script({}, default=Fault("garbage"))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        options = Options(
            criteria_dir=claims_project.criteria, sets_dir=claims_project.sets, cache_dir=None
        )
        with pytest.raises(NoVerdicts, match=r"gave no verdict on any of its 5 examples"):
            measure(options)
        done = CliRunner().invoke(app, ["calibrate", "-q", "--no-history"])
    assert done.exit_code == 4, done.output
    assert "answered, but gave no verdict on any of its 5 examples" in done.output
    assert "not a list of claims" in done.output
    assert not (claims_project.root / ".judgekit" / "reports" / "latest" / "report.json").exists()


SCRIPTED = {
    "budget $160 million": Claims(
        {"The Poseidon grossed $181 million": True, "Its budget was $160 million": True}
    ),
    "won an Oscar": Claims(
        {"The Poseidon grossed $181 million": True, "The Poseidon won an Oscar": False}
    ),
    "EXTRACT-GARBAGE": Fault("garbage"),
    "garble me": Claims({"Something garbled": Fault("malformed_json")}),
}


@pytest.mark.parametrize("double", ["FakeLLM", "FakeServer"])
def test_claims_script_both_steps_of_a_claims_check_for_either_double(
    claims_project, monkeypatch, double
):
    """`Claims` script a claims check for FakeLLM and FakeServer alike: the extraction step lists
    the scripted claims, the verification step gives each one's support, and a Fault or a plain
    verdict works as for any judge (an unlisted reply, with the default False, is its one claim,
    unsupported). Before, a script could only answer pass/fail verdicts, which no claims check
    can read, and a test needed a hand-written fake of both prompts (`answer` above)."""
    expected = {
        "good": True,
        "one-bad": False,
        "none": False,  # unlisted: the default, one claim, unsupported
        "garbled-extraction": None,
        "garbled-verification": None,
    }
    if double == "FakeLLM":
        report = _run(claims_project, llm=FakeLLM.scripted(SCRIPTED, default=False))
    else:
        with FakeServer(script(SCRIPTED, default=False)) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.url)
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
            report = measure(
                Options(
                    criteria_dir=claims_project.criteria,
                    sets_dir=claims_project.sets,
                    cache_dir=None,
                )
            )
    c = report.criteria[0]
    assert {e: verdict for e, (_, verdict) in c.outcomes.items()} == expected
    assert {d.id: d.abstention for d in c.disagreements if d.verdict is None} == {
        "garbled-extraction": "unparseable extraction",
        "garbled-verification": "unparseable verification",
    }
