"""`calibrate --dry-run`: per criterion the calls to make, the answers cached (by the cache's own
lookup), the prompt tokens and the cost at most — with no call made and nothing written."""

from __future__ import annotations

import json
import time

import diskcache
import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.pipeline import Options, dry_run, measure
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion
from tests.test_claims import EXAMPLES, SOURCE, answer

VERDICTS = script({"reply-p": True, "reply-f": False})
runner = CliRunner()


@pytest.fixture
def setup(project):
    project.criterion(llm_criterion())
    project.criterion(
        {
            "id": "no-email",
            "kind": "regex",
            "question": "Free of email addresses?",
            "pattern": "@",
            "match_means": "fail",
        }
    )
    project.jsonl("says-blocked", balanced(4, 4))
    project.jsonl("no-email", balanced(2, 2))
    return project


def dry(server, *extra, model="openai/judge"):
    result = runner.invoke(
        app,
        ["calibrate", "--dry-run", "--json", "--model", model, "--api-base", server.url, *extra],
    )
    assert result.exit_code == 0, result.output
    return {c["criterion"]: c for c in json.loads(result.output)["criteria"]}


def test_a_dry_run_asks_nothing_writes_nothing_and_counts_what_is_cached(setup):
    with FakeServer(VERDICTS) as server:
        first = dry(server)
        # no cache, report or history made
        assert server.requests == 0 and not (setup.root / ".judgekit").exists()
        assert (first["says-blocked"]["calls"], first["says-blocked"]["cached"]) == (8, 0)
        assert first["no-email"] == {**first["no-email"], "source": "code", "calls": 0}
        common = ["--model", "openai/judge", "--api-base", server.url, "-q"]
        assert runner.invoke(app, ["calibrate", *common]).exit_code == 0 and server.requests == 8
        cache = setup.root / ".judgekit" / "cache"
        files = sorted(
            p.name
            for p in (setup.root / ".judgekit").rglob("*")
            if p.is_file() and "cache" not in p.parts
        )
        with diskcache.Cache(str(cache)) as store:
            answers = {k: store[k] for k in store.iterkeys()}
            # Two answers older than the gate's max_age (30 days) and one unreadable: calls to make.
            for key in list(answers)[:2]:
                store[key] = json.dumps(
                    {**json.loads(answers[key]), "obtained_at": time.time() - 40 * 86400}
                )
            store[list(answers)[2]] = json.dumps(
                {**json.loads(answers[list(answers)[2]]), "text": "Lorem ipsum"}
            )
        new = {"id": "p9", "input": "lost card", "output": "reply-p9: blocked", "passed": True}
        setup.jsonl("says-blocked", [*balanced(4, 4), new])  # and one example more
        again = dry(server)
        assert (again["says-blocked"]["calls"], again["says-blocked"]["cached"]) == (4, 5)
        assert server.requests == 8  # still no call
        with diskcache.Cache(str(cache)) as store:
            # the cache as it was
            assert len(store) == 8 and store[list(answers)[2]].count("Lorem ipsum") == 1
        assert (
            sorted(
                p.name
                for p in (setup.root / ".judgekit").rglob("*")
                if p.is_file() and "cache" not in p.parts
            )
            == files
        )  # no report or history rewritten
        plain = runner.invoke(
            app, ["calibrate", "--dry-run", "--model", "openai/judge", "--api-base", server.url]
        )
        assert (
            plain.exit_code == 0
            and "says-blocked" in plain.output
            and "nothing was asked, nothing written" in plain.output
        )
        assert server.requests == 8


def test_the_token_estimate_is_close_to_what_the_provider_counts_and_the_cost_is_litellm_s(setup):
    with FakeServer(VERDICTS) as server:
        estimate = dry(server)["says-blocked"]
        unknown_price = estimate["cost_at_most"]
        report = measure(
            Options(
                criteria_dir=setup.criteria,
                sets_dir=setup.sets,
                model="openai/judge",
                api_base=server.url,
                cache_dir=None,
            )
        ).criterion("says-blocked")
        priced = dry(server, model="openai/gpt-4o-mini")["says-blocked"]
    assert unknown_price is None  # a model litellm has no price for: unknown, not 0
    # The fake provider counts a prompt as its characters / 4, the messages joined by newlines.
    assert abs(estimate["prompt_tokens"] - report.usage.prompt_tokens) <= 2 * estimate["calls"]
    assert priced["completion_tokens_at_most"] == 8 * 512
    import litellm

    prompt_cost, answer_cost = litellm.cost_per_token(
        model="openai/gpt-4o-mini", prompt_tokens=priced["prompt_tokens"], completion_tokens=8 * 512
    )
    assert (
        priced["cost_at_most"] == pytest.approx(prompt_cost + answer_cost)
        and priced["cost_at_most"] > 0
    )


def test_claims_count_extractions_and_say_the_verifications_depend_on_them(project):
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported?",
            "judge": {"model": "openai/checker"},
        }
    )
    project.jsonl("grounded", [{**e, "context": SOURCE} for e in EXAMPLES])
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=project.root / "cache"
    )
    with FakeServer(answer) as server:
        options.api_base = server.url
        (before,) = dry_run(options)
        # the 5 extractions, nothing else known
        assert (before.calls, before.cached, before.unknown) == (
            5,
            0,
            5,
        )
        measure(options)
        asked = server.requests
        (after,) = dry_run(options)
        assert server.requests == asked
    # Cached: 4 readable extractions and the batched verifications of good and one-bad; to make: the
    # unreadable extraction (its verification unknown) and garbled-verification's
    # unreadable verification.
    assert (after.calls, after.cached, after.unknown) == (2, 6, 1)
    result = runner.invoke(
        app,
        [
            "calibrate",
            "--dry-run",
            "--api-base",
            server.url,
            "--cache-dir",
            str(project.root / "cache"),
        ],
    )
    assert "grounded: and the verification calls of 1 extraction(s) still to make" in result.output


def test_recorded_verdicts_and_bad_input_in_a_dry_run(setup, tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": r["id"], "passed": r["passed"], "criterion": "says-blocked"}) + "\n"
            for r in balanced(4, 4)
        )
    )
    result = runner.invoke(
        app, ["calibrate", "--dry-run", "--json", "--verdicts", str(path), "-c", "says-blocked"]
    )
    assert (
        result.exit_code == 0
        and json.loads(result.output)["criteria"][0]["source"] == "recorded:v.jsonl"
    )
    setup.criterion({"id": "says-blocked", "question": "?"})
    bad = runner.invoke(app, ["calibrate", "--dry-run", "--model", "openai/judge"])
    assert bad.exit_code == 2 and "says-blocked.yaml:question" in bad.output
