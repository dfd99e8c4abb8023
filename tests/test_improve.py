"""`judgekit improve` against a scripted judge and optimizer: a rewording better on every split is
accepted (and written with --write), one better on dev only is rejected on test, a worse one never
wins dev; every look at the test split spends its budget, and a spent budget waits for fresh
examples; few-shot examples come from dev only."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.improve.search import Search, improve
from judgekit.inputs.criteria import load_criterion
from judgekit.inputs.identity import identity
from judgekit.inputs.sets import load_set
from judgekit.llm.protocol import Request
from judgekit.pipeline import Options
from judgekit.stats.acceptance import MAX_LOOKS
from judgekit.testing import FakeLLM, judged_reply, prompt_of
from judgekit.watch.alpha_budget import Look, next_look
from judgekit.watch.history import History

QUESTION = "Does it look blocked?"
GOOD = "Does the reply say the card is now blocked?"
OVERFIT = "Does the reply say blocked, as in the examples?"
WORSE = "Is the reply polite?"


def _rows(n: int, split: str, start: int = 0) -> list[dict]:
    return [
        {
            "id": f"e{i}",
            "output": f"<e{i}> reply {'blocked' if i % 2 == 0 else 'not blocked'}",
            "passed": i % 2 == 0,
            "split": split,
        }
        for i in range(start, start + n)
    ]


def _project(root: Path, test: int = 100) -> None:
    (root / "criteria").mkdir(exist_ok=True)
    (root / "calibration_sets").mkdir(exist_ok=True)
    (root / "criteria" / "blocked.yaml").write_text(
        "# kept at the top\n"
        + yaml.safe_dump(
            {"id": "blocked", "question": QUESTION, "judge": {"model": "openai/judge"}}
        )
    )
    rows = _rows(60, "dev") + _rows(test, "test", start=1000)
    (root / "calibration_sets" / "blocked.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )


def _fake(proposals: list[str]) -> FakeLLM:
    """The judge is right on a share of replies that depends on the wording it is given; the
    optimizer proposes `proposals`."""

    def answer(request: Request) -> str:
        if (
            request.response_format
            and request.response_format["json_schema"]["name"] == "proposals"
        ):
            return json.dumps(
                {
                    "proposals": [
                        {"rationale": f"try {q}", "question": q, "pass_when": "", "fail_when": ""}
                        for q in proposals
                    ]
                }
            )
        prompt = prompt_of(request.messages)
        reply = judged_reply(prompt)
        n = int(reply[2 : reply.index(">")])
        test = n >= 1000
        if GOOD in prompt:
            wrong = n % 20 == 0
        elif OVERFIT in prompt:
            wrong = test and n % 10 < 4
        elif WORSE in prompt:
            wrong = n % 2 == 0
        else:
            wrong = n % 10 < 3
        label = "not blocked" not in reply
        return json.dumps({"reasoning": "scripted", "passed": label != wrong})

    return FakeLLM(answer)


def _options(root: Path) -> Options:
    return Options(
        criteria_dir=root / "criteria", sets_dir=root / "calibration_sets", cache_dir=None
    )


def test_a_rewording_better_on_every_split_is_accepted_and_written(tmp_path):
    _project(tmp_path)
    fake = _fake([GOOD, WORSE])
    found = improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer"),
        tmp_path / "h.sqlite",
        llm=fake,
    )
    assert found.best.spec.name == "reworded-1" and found.accepted
    a = found.acceptance
    assert (a.n, a.current_right, a.candidate_right, a.alpha) == (100, 70, 95, 0.025)
    assert a.p_value < 1e-6
    with History.open(tmp_path / "h.sqlite") as db:
        (look,) = db.looks("blocked")
    assert (
        look.purpose == "improve"
        and look.accepted
        and len(look.examples) == 100
        and look.alpha == 0.025
    )
    # The judge's prompts on the test split were only those of the current
    # judge and the best candidate.
    on_test = [
        prompt_of(r.messages)
        for r in fake.requests
        if r.response_format["json_schema"]["name"] != "proposals"
        and int(judged_reply(prompt_of(r.messages))[2:].split(">")[0]) >= 1000
    ]
    assert {q for p in on_test for q in (QUESTION, GOOD, WORSE) if q in p} == {QUESTION, GOOD}


def _run_command(tmp_path, proposals: list[str]):
    """`judgekit improve --write` over real HTTP, the scripted judge and optimizer
    behind the fake server."""
    from judgekit.testing import FakeServer

    fake = _fake(proposals)

    def judge(prompt: str) -> str:
        return fake.answer(Request("openai/judge", [{"role": "user", "content": prompt}]))

    def optimizer(prompt: str) -> str:
        schema = {"type": "json_schema", "json_schema": {"name": "proposals"}}
        return fake.answer(
            Request(
                "openai/optimizer", [{"role": "user", "content": prompt}], response_format=schema
            )
        )

    with FakeServer(judge, models={"optimizer": optimizer}) as server:
        return CliRunner().invoke(
            app,
            [
                "improve",
                "-c",
                "blocked",
                "--optimizer-model",
                "openai/optimizer",
                "--write",
                "--api-base",
                server.url,
            ],
            catch_exceptions=False,
        )


def test_with_write_a_proposal_not_accepted_changes_nothing(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    # An endpoint with a password in the criterion: the copies in .judgekit/improve never hold it.
    path = tmp_path / "criteria" / "blocked.yaml"
    criterion = yaml.safe_load(path.read_text())
    criterion["judge"]["api_base"] = "http://ana:hunter2-secret-pass@127.0.0.1:9/v1"
    path.write_text("# kept at the top\n" + yaml.safe_dump(criterion))
    before = (tmp_path / "criteria" / "blocked.yaml").read_text()
    done = _run_command(tmp_path, [OVERFIT])  # best on dev, not better on test
    assert done.exit_code == 1 and "not accepted" in done.output and "written:" not in done.output
    assert (tmp_path / "criteria" / "blocked.yaml").read_text() == before
    folder = tmp_path / ".judgekit" / "improve" / "blocked"
    assert (folder / "proposal.yaml").read_text().count(OVERFIT) == 1
    assert not any("hunter2-secret-pass" in f.read_text() for f in folder.iterdir())
    assert "hunter2-secret-pass" not in done.output


def test_the_command_writes_the_proposal_and_with_write_the_criterion(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    done = _run_command(tmp_path, [GOOD])
    assert done.exit_code == 0, done.output
    assert "ACCEPTED" in done.output and f"+question: {GOOD}" in done.output
    written = (tmp_path / "criteria" / "blocked.yaml").read_text()
    assert (
        written.startswith("# kept at the top\n")
        and load_criterion(tmp_path / "criteria" / "blocked.yaml").question == GOOD
    )
    assert (tmp_path / ".judgekit" / "improve" / "blocked" / "proposal.diff").read_text().count(
        f"+question: {GOOD}"
    ) == 1
    summary = json.loads(
        (tmp_path / ".judgekit" / "improve" / "blocked" / "improve.json").read_text()
    )
    assert summary["accepted"] and summary["test"]["only_candidate_right"] == 25
    html = (tmp_path / ".judgekit" / "improve" / "blocked" / "improve.html").read_text()
    assert "accepted</span>" in html and "Right on 95 of 100 held-out examples against 70" in html
    gate = CliRunner().invoke(app, ["gate"])
    assert gate.exit_code == 1  # a changed judge: no report about it yet


def test_better_on_dev_only_is_rejected_on_test(tmp_path):
    _project(tmp_path)
    found = improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer"),
        tmp_path / "h.sqlite",
        llm=_fake([OVERFIT, GOOD, WORSE]),
    )
    assert found.best.spec.name == "reworded-1"  # right on all 60 dev examples
    assert not found.accepted
    assert found.acceptance.candidate_right == 60 and found.acceptance.current_right == 70
    assert "not significantly better" in found.acceptance.reasons[0]


def test_nothing_better_on_dev_leaves_the_test_split_alone(tmp_path):
    _project(tmp_path)
    found = improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer", shots=0),
        tmp_path / "h.sqlite",
        llm=_fake([WORSE]),
    )
    assert found.best is None and found.acceptance is None
    with History.open(tmp_path / "h.sqlite") as db:
        assert db.looks("blocked") == []


def test_the_test_split_is_a_budget_and_fresh_examples_open_a_new_one(tmp_path):
    _project(tmp_path)
    for look in range(1, MAX_LOOKS + 1):
        found = improve(
            _options(tmp_path),
            "blocked",
            Search(optimizer_model="openai/optimizer"),
            tmp_path / "h.sqlite",
            llm=_fake([GOOD]),
        )
        assert found.budget.look == look and found.acceptance.alpha == 0.05 / 2**look
    spent = improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer"),
        tmp_path / "h.sqlite",
        llm=_fake([GOOD]),
    )
    assert spent.budget.look is None and spent.acceptance is None and not spent.accepted
    assert "add 100 fresh labelled test examples" in spent.budget.words()
    _project(tmp_path, test=160)  # 60 examples no look has used: not yet enough
    assert (
        improve(
            _options(tmp_path),
            "blocked",
            Search(optimizer_model="openai/optimizer"),
            tmp_path / "h.sqlite",
            llm=_fake([GOOD]),
        ).budget.needed
        == 40
    )
    _project(tmp_path, test=200)
    fresh = improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer"),
        tmp_path / "h.sqlite",
        llm=_fake([GOOD]),
    )
    criterion = load_criterion(tmp_path / "criteria" / "blocked.yaml")
    new = {
        identity(criterion, e.fields())
        for e in load_set(tmp_path / "calibration_sets" / "blocked.jsonl", "blocked").examples
        if int(e.id[1:]) >= 1100
    }
    assert fresh.budget.look == 1 and set(fresh.budget.examples) == new and len(new) == 100
    assert fresh.acceptance.n == 100


def test_the_same_replies_under_new_ids_are_not_fresh(tmp_path):
    _project(tmp_path)
    for _ in range(MAX_LOOKS):
        improve(
            _options(tmp_path),
            "blocked",
            Search(optimizer_model="openai/optimizer"),
            tmp_path / "h.sqlite",
            llm=_fake([GOOD]),
        )
    path = tmp_path / "calibration_sets" / "blocked.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "id": "renamed-" + r["id"]}) + "\n" for r in rows))
    spent = improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer"),
        tmp_path / "h.sqlite",
        llm=_fake([GOOD]),
    )
    assert spent.budget.look is None and spent.acceptance is None


def test_a_budget_never_reuses_examples_across_generations():
    looks = [Look("c", "improve", "g1", ("a", "b"), 0.025)] * MAX_LOOKS
    # "a" was removed: g1 ended; only unused examples count
    after = next_look(looks, ["b", "c", "d"], 0.05)
    assert after.look == 1 and after.examples == ("c", "d")


def test_examples_spent_under_another_generation_open_no_fresh_budget():
    """Two histories merged: one spent its looks on t0..t19; the other, which also held t20, took
    one look at t0..t20. Their looks together leave the split spent, not at look 2 of its budget."""
    ids = tuple(f"t{i}" for i in range(20))
    looks = [Look("c", "improve", "g1", ids, 0.025)] * MAX_LOOKS + [
        Look("c", "improve", "g2", ids + ("t20",), 0.025)
    ]
    merged = next_look(looks, [*ids, "t20"], 0.05)
    assert merged.look is None and merged.needed > 0
    forged = [Look("c", "improve", "g1", ids, 0.025)] * MAX_LOOKS + [
        Look("c", "improve", "anything", ids, 0.025)
    ]
    assert next_look(forged, ids, 0.05).look is None


def test_few_shot_examples_come_from_dev_and_the_optimizer_is_not_the_judge(tmp_path):
    _project(tmp_path)
    found = improve(
        _options(tmp_path), "blocked", Search(shots=4), tmp_path / "h.sqlite", llm=_fake([])
    )
    shots = next(p for p in found.tried if p.name == "few-shot-4").criterion.examples
    dev = {r["output"] for r in _rows(60, "dev")}
    assert (
        len(shots) == 4
        and all(s.output in dev for s in shots)
        and [s.passed for s in shots] == [True, False] * 2
    )
    with pytest.raises(Exception, match="is the judge's own model"):
        improve(
            _options(tmp_path),
            "blocked",
            Search(optimizer_model="openai/judge"),
            tmp_path / "h.sqlite",
            llm=_fake([]),
        )


def test_improve_needs_dev_and_test_splits(tmp_path):
    _project(tmp_path)
    rows = [dict(r, split="dev") for r in _rows(60, "dev")]
    (tmp_path / "calibration_sets" / "blocked.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    with pytest.raises(Exception, match="the test split has 0 example"):
        improve(_options(tmp_path), "blocked", Search(), tmp_path / "h.sqlite", llm=_fake([]))
    assert (
        not sqlite3.connect(tmp_path / "h.sqlite")
        .execute("SELECT name FROM sqlite_master")
        .fetchall()
    )


def test_compare_adopt_and_an_edit_measured_on_test_are_looks(tmp_path, monkeypatch):
    from judgekit.testing import FakeServer

    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    with FakeServer(
        lambda prompt: json.dumps(
            {"reasoning": "r", "passed": "not blocked" not in judged_reply(prompt)}
        )
    ) as server:
        common = ["--api-base", server.url]
        assert runner.invoke(app, ["calibrate", "--split", "test", *common]).exit_code == 0
        with History.open(".judgekit/history.sqlite") as db:
            assert db.looks("blocked") == []  # the first measure of a judge on test is no look
        criterion = yaml.safe_load(Path("criteria/blocked.yaml").read_text())
        Path("criteria/blocked.yaml").write_text(yaml.safe_dump({**criterion, "question": GOOD}))
        assert runner.invoke(app, ["calibrate", "--split", "test", *common]).exit_code == 0
        adopted = runner.invoke(
            app,
            [
                "compare",
                "-c",
                "blocked",
                "--split",
                "test",
                "--trials",
                "1,3",
                "--adopt",
                "x1",
                *common,
            ],
        )
        assert adopted.exit_code == 0, adopted.output
    with History.open(".judgekit/history.sqlite") as db:
        looks = db.looks("blocked")
    # The adopted calibration joins the history too, but that judge was looked at
    # already: no second look.
    assert [(x.purpose, x.alpha) for x in looks] == [("calibrate", 0.025), ("compare", 0.0125)]
    assert len(looks[0].examples) == 100


def test_the_current_judge_is_the_one_the_report_measured(tmp_path, monkeypatch):
    """Calibrated with three trials and plain answers, the judge `improve` starts from (and every
    candidate made from it) is asked so, not as the criterion file's defaults say: a candidate is
    measured against the judge that was measured."""
    from judgekit.inputs.criteria import with_trials
    from judgekit.judging.build_setup import setup_of

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    _project(tmp_path)
    criterion = load_criterion(tmp_path / "criteria" / "blocked.yaml")
    calibrated = setup_of(
        with_trials(criterion, 3), model="openai/judge", api_base=None, via="auto", structured=False
    )
    fake = _fake([WORSE])
    improve(
        _options(tmp_path),
        "blocked",
        Search(optimizer_model="openai/optimizer", shots=0),
        tmp_path / "h.sqlite",
        llm=fake,
        calibrated=calibrated,
    )
    current = [
        r for r in fake.requests if r.model == "openai/judge" and WORSE not in prompt_of(r.messages)
    ]
    # the current judge's three trials (candidates of other trial counts are tried beside it)
    assert current and all(r.response_format is None for r in current)
    assert {0, 1, 2} <= {r.trial for r in current}
