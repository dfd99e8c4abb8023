"""What counts as one example and what counts as held out (issue 32): one identity of an example
(the digest of what its judge is shown), one held-out discipline for calibrate, compare, improve
and the gate, and labels that say who made them. Each test is one hole an attacker or a new user
found, through the command line or the plain API with fakes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

import judgekit
from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.improve.search import Search, improve
from judgekit.inputs.criteria import FewShot, LLMCriterion
from judgekit.inputs.label_writer import write_label
from judgekit.inputs.project import load_inputs
from judgekit.inputs.sets import Example
from judgekit.llm.protocol import Request
from judgekit.pipeline import Options
from judgekit.stats.acceptance import MAX_LOOKS
from judgekit.testing import FakeLLM, FakeServer, judged_reply, prompt_of, script
from judgekit.watch.history import History
from tests.conftest import balanced, llm_criterion

runner = CliRunner()
REPORT = Path(".judgekit/reports/latest/report.json")
RIGHT = script({"reply-p": True}, default=False)


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@contextmanager
def served(project, monkeypatch, answer=RIGHT) -> Iterator[FakeServer]:
    """The fake provider at the environment's OpenAI endpoint."""
    with FakeServer(answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


# 1. The same reply under 20 ids is one example.


def _copied(n: int) -> list[dict]:
    """One known-good and one known-bad reply, each under n ids (`good`, `good#2`, ...): what a
    repeated run's import produces."""
    rows = []
    for name, passed in (("good", True), ("bad", False)):
        for i in range(1, n + 1):
            rows.append(
                {
                    "id": name if i == 1 else f"{name}#{i}",
                    "input": "lost card",
                    "output": f"reply-{'p' if passed else 'f'}: the {name} one",
                    "passed": passed,
                }
            )
    return rows


def test_one_reply_under_twenty_ids_is_one_example_to_validate_calibrate_and_the_gate(
    project, monkeypatch
):
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", _copied(20))
    checked = invoke("validate")
    assert checked.exit_code == 0, checked.output
    assert "38 examples of the set show the judge the same text" in checked.output
    assert "ok: 1 criteria, 2 labelled examples" in checked.output
    with served(project, monkeypatch) as server:
        done = invoke("calibrate", "-q", "--gate")
    assert server.requests == 2  # one question per distinct example
    report = json.loads(REPORT.read_text())["criteria"][0]
    assert report["n"] == 2 and report["copies"]["good"] == [f"good#{i}" for i in range(2, 21)]
    # The gate counts two examples, not 40: too few to pass.
    assert done.exit_code == 3, done.output
    assert "1 known-good and 1 known-bad" in done.output


def test_drawn_records_that_repeat_a_reply_count_once_toward_min_examples(project, monkeypatch):
    """Drawn examples stay as units of their pool's design, copies or not: a made-up pool of
    byte-identical copies of 16 replies (each given a `selection`) passed min_examples as 64."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    rows = balanced(8, 8)
    drawn, place = [], {"pass": 0, "fail": 0}
    for k in range(3):
        for row in rows:
            stratum = "pass" if row["passed"] else "fail"
            selection = {"pool": "made-up", "stratum": stratum, "sizes": {"pass": 24, "fail": 24}}
            drawn.append(
                {
                    **row,
                    "id": f"{row['id']}-{k}",
                    "selection": {**selection, "position": place[stratum]},
                }
            )
            place[stratum] += 1
    project.jsonl("says-blocked", rows + drawn)
    with served(project, monkeypatch):
        done = invoke("calibrate", "-q", "--gate")
    assert done.exit_code == 3, done.output
    assert "too few labelled examples: 8 known-good and 8 known-bad" in done.output
    assert "48 drawn examples show the judge a reply another example shows" in done.output
    again = invoke("gate")
    assert again.exit_code == 3 and "8 known-good and 8 known-bad" in again.output


def test_the_same_shown_text_with_opposite_labels_is_an_error_naming_both_ids(project):
    project.criterion(llm_criterion(inputs=["output"]))
    rows = balanced(3, 3)
    rows.append({**rows[0], "id": "again", "input": "another question", "passed": False})
    project.jsonl("says-blocked", rows)
    done = invoke("validate")
    assert done.exit_code == 2
    assert "id again" in done.output and "as id p0 but is labelled fail" in done.output


def test_the_gate_checks_the_copies_a_report_names_against_the_set(project, monkeypatch):
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(20, 20) + _copied(2))
    with served(project, monkeypatch):
        assert invoke("calibrate", "-q", "--gate").exit_code == 0
    data = json.loads(REPORT.read_text())
    entry = data["criteria"][0]

    # A report that hides an example it got wrong by calling it a copy: not the set's copies.
    entry["copies"] = {**entry["copies"], "p0": ["p1"]}
    REPORT.write_text(json.dumps(data))
    refused = invoke("gate")
    assert refused.exit_code == 1 and "report.json's copies are not the set's" in refused.output

    # A report that does not say (written before copies were counted once) is not evidence.
    del entry["copies"]
    REPORT.write_text(json.dumps(data))
    unsaid = invoke("gate")
    assert unsaid.exit_code == 1 and "does not say which examples of the set are copies" in (
        unsaid.output
    )


# 7. Few-shot leakage by what the judge is shown.


def test_a_set_example_the_judge_sees_as_a_few_shot_example_is_refused_whatever_its_input(
    project,
):
    shot = {"input": "a question the judge never sees", "output": "reply-p0: blocked"}
    project.criterion(llm_criterion(inputs=["output"], examples=[{**shot, "passed": True}]))
    project.jsonl("says-blocked", balanced(3, 3))  # p0: input "lost card", the same output
    done = invoke("validate")
    assert done.exit_code == 2 and "id p0" in done.output
    assert "few-shot example of criterion 'says-blocked'" in done.output


def test_held_out_leaves_out_what_a_shot_shows():
    from judgekit.inputs.heldout import held_out, leaked
    from judgekit.inputs.identity import identity

    criterion = LLMCriterion(
        id="c",
        question="Is it blocked?",
        inputs=["output"],
        examples=[FewShot(input="x", output="It is  blocked.", passed=True)],
    )
    examples = [
        Example(id="a", input="y", output="It is blocked.", passed=True),
        Example(id="b", output="It is not blocked.", passed=False),
    ]
    assert leaked(criterion, examples) == ["a"]
    assert [e.id for e in held_out(criterion, examples)] == ["b"]
    with_input = criterion.model_copy(update={"inputs": ["input", "output"]})
    assert identity(with_input, examples[0].fields()) != identity(criterion, examples[0].fields())


# 2, 5, 6. improve: the budget keyed by identity; shots are not held-out evidence; --write.

QUESTION = "Does it look blocked?"
GOOD = "Does the reply say the card is now blocked?"


def _rows(n: int, split: str, start: int = 0, prefix: str = "e") -> list[dict]:
    return [
        {
            "id": f"{prefix}{i}",
            "input": f"question {i}",
            "output": f"<e{i}> reply {'blocked' if i % 2 == 0 else 'not blocked'}",
            "passed": i % 2 == 0,
            "split": split,
        }
        for i in range(start, start + n)
    ]


def _improve_project(root: Path, rows: list[dict], inputs: list[str] | None = None) -> None:
    (root / "criteria").mkdir(exist_ok=True)
    (root / "calibration_sets").mkdir(exist_ok=True)
    criterion = {"id": "blocked", "question": QUESTION, "judge": {"model": "openai/judge"}}
    if inputs:
        criterion["inputs"] = inputs
    (root / "criteria" / "blocked.yaml").write_text(yaml.safe_dump(criterion))
    (root / "calibration_sets" / "blocked.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )


def _judge(wrong, proposals: list[str] = ()) -> FakeLLM:
    """A judge wrong where `wrong(n, prompt)` says; an optimizer proposing `proposals`."""

    def answer(request: Request) -> str:
        if request.response_format and request.response_format["json_schema"]["name"] == (
            "proposals"
        ):
            return json.dumps(
                {
                    "proposals": [
                        {"rationale": "try", "question": q, "pass_when": "", "fail_when": ""}
                        for q in proposals
                    ]
                }
            )
        prompt = prompt_of(request.messages)
        reply = judged_reply(prompt)
        n = int(reply[2 : reply.index(">")])
        label = "not blocked" not in reply
        return json.dumps({"reasoning": "scripted", "passed": label != wrong(n, prompt)})

    return FakeLLM(answer)


def _options(root: Path) -> Options:
    return Options(
        criteria_dir=root / "criteria", sets_dir=root / "calibration_sets", cache_dir=None
    )


def test_rewording_a_field_the_judge_never_reads_does_not_refresh_the_test_budget(tmp_path):
    _improve_project(tmp_path, _rows(60, "dev") + _rows(100, "test", 1000), inputs=["output"])
    fake = _judge(lambda n, p: n % 20 == 0 if GOOD in p else n % 10 < 3, [GOOD])
    history = tmp_path / "h.sqlite"
    search = Search(optimizer_model="openai/optimizer", shots=0)
    first = improve(_options(tmp_path), "blocked", search, history, llm=fake)
    assert first.budget.look == 1
    path = tmp_path / "calibration_sets" / "blocked.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for r in rows:
        if r["split"] == "test":
            r["input"] = f"reworded {r['input']}"  # the judge is shown the output only
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    second = improve(_options(tmp_path), "blocked", search, history, llm=fake)
    assert second.budget.look == 2 and second.budget.alpha == pytest.approx(0.0125)


def _leaky_rows() -> list[dict]:
    """dev 40, test 100; test t0-t7 show the judge what dev e0-e7 show it."""
    dev = _rows(40, "dev")
    test = _rows(100, "test", 1000, prefix="t")
    for i in range(8):
        test[i] = {**dev[i], "id": f"t{i}", "split": "test"}
    return dev + test


def test_improve_counts_no_test_reply_shown_to_the_candidate_as_held_out_evidence(tmp_path):
    _improve_project(tmp_path, _leaky_rows())

    def wrong(n: int, prompt: str) -> bool:
        # Right on a reply it is shown with its answer. The current judge is wrong on e0-e11 (and
        # so on the test copies of e0-e7); the few-shot candidate, shown e0-e7 (the current
        # judge's disagreements first), is right on e8-e11 too: better on dev.
        if prompt.count(f"<e{n}>") > 1:
            return False
        return n < (8 if "Examples of correct decisions" in prompt else 12)

    found = improve(
        _options(tmp_path), "blocked", Search(shots=8), tmp_path / "h.sqlite", llm=_judge(wrong)
    )
    assert found.best is not None and found.best.spec.name == "few-shot-8"
    # Not "right on 100 of 100 held-out examples against 92": the copies are one example each,
    # the dev one, and the test split holds the 92 the candidate was never shown.
    assert found.acceptance is not None and found.acceptance.n == 92
    assert not found.accepted
    assert found.acceptance.candidate_right == found.acceptance.current_right == 92


def _helped_by_shots(prompt: str) -> bool:
    """A judge wrong on 3 replies in 10 unless it is shown few-shot examples."""
    reply = judged_reply(prompt)
    n = int(reply[2 : reply.index(">")])
    wrong = "Examples of correct decisions" not in prompt and n % 10 < 3
    return ("not blocked" not in reply) != wrong


def test_improve_write_keeps_the_criterion_calibratable(tmp_path, monkeypatch):
    _improve_project(tmp_path, _rows(40, "dev") + _rows(100, "test", 1000))
    monkeypatch.chdir(tmp_path)

    with FakeServer(_helped_by_shots) as server:
        done = invoke(
            "improve", "-c", "blocked", "--shots", "4", "--write", "--api-base", server.url
        )
        assert done.exit_code == 0, done.output
        assert "few-shot-4, ACCEPTED" in done.output
        assert "4 examples of" in done.output and "left the set" in done.output
        written = yaml.safe_load((tmp_path / "criteria" / "blocked.yaml").read_text())
        assert len(written["examples"]) == 4  # the examples left the set into the criterion file
        # was: exit 2, "is also a few-shot example of criterion 'blocked'"
        calibrated = invoke("calibrate", "-q", "--api-base", server.url)
    assert calibrated.exit_code == 0, calibrated.output


# 3. Any run that measures a changed judge on test examples is a look.


def _split_project(project) -> None:
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    rows = [{**r, "split": "dev"} for r in balanced(20, 20)]
    rows += [{**r, "split": "test"} for r in balanced(20, 20, prefix="t")]
    project.jsonl("says-blocked", rows)


def test_calibrating_a_changed_judge_on_the_whole_set_is_a_look_at_the_test_split(
    project, monkeypatch
):
    _split_project(project)
    with served(project, monkeypatch):
        assert invoke("calibrate", "-q").exit_code == 0
        with History.open(".judgekit/history.sqlite") as db:
            assert db.looks("says-blocked") == []  # the criterion's first judge: no change
        project.criterion(llm_criterion(judge={"model": "openai/judge"}, pass_when="edited"))
        assert invoke("calibrate", "-q").exit_code == 0  # no --split: the test split included
    with History.open(".judgekit/history.sqlite") as db:
        (look,) = db.looks("says-blocked")
    assert look.purpose == "calibrate" and len(look.examples) == 40


def test_no_history_is_refused_when_the_run_includes_test_examples(project, monkeypatch):
    _split_project(project)
    with served(project, monkeypatch) as server:
        refused = invoke("calibrate", "-q", "--no-history")
        assert refused.exit_code == 2 and server.requests == 0
        assert "40 test-split examples: measuring criterion 'says-blocked'" in refused.output
        assert "drop --no-history" in refused.output
        assert invoke("calibrate", "-q", "--no-history", "--split", "dev").exit_code == 0


def _scripted() -> FakeLLM:
    return FakeLLM.scripted({"reply-p": True}, default=False)


def test_the_python_api_records_a_changed_judges_look_as_the_cli_does(project):
    """`judgekit.calibrate` is the CLI's calibration: the run is kept in the project's history,
    and an edited judge measured on the whole set spends a look (was: nothing recorded, so
    "edit, calibrate" from a notebook tuned on the test split for free)."""
    _split_project(project)
    options = Options(criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None)
    judgekit.calibrate(options, llm=_scripted())
    with History.open(".judgekit/history.sqlite") as db:
        assert len(db.runs("says-blocked", "calibrate")) == 1
        assert db.looks("says-blocked") == []  # the criterion's first judge: no change
    project.criterion(llm_criterion(judge={"model": "openai/judge"}, pass_when="edited"))
    report = judgekit.calibrate(options, llm=_scripted())
    assert report.criterion("says-blocked").n == 80
    with History.open(".judgekit/history.sqlite") as db:
        (look,) = db.looks("says-blocked")
    assert look.purpose == "calibrate" and len(look.examples) == 40


def test_the_python_api_counts_a_change_against_the_report_on_disk_in_a_new_history(project):
    """A new history file is no fresh start from Python either: the report where `judgekit
    calibrate` writes it is of another judge, so measuring the edited one is a look."""
    _split_project(project)
    options = Options(criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None)
    judgekit.calibrate(options, llm=_scripted()).write(Path(".judgekit/reports/latest"))
    Path(".judgekit/history.sqlite").unlink()
    project.criterion(llm_criterion(judge={"model": "openai/judge"}, pass_when="edited"))
    judgekit.calibrate(options, llm=_scripted())
    with History.open(".judgekit/history.sqlite") as db:
        (look,) = db.looks("says-blocked")
    assert look.purpose == "calibrate" and len(look.examples) == 40


def _cached_then_found_changed(options: Options, criterion: str = "says-blocked") -> None:
    """Calibrate twice (the second from the cache, started after every answer was obtained),
    then record that a recheck found `criterion`'s judge changed."""
    judgekit.calibrate(options)
    time.sleep(0.01)
    later = judgekit.calibrate(options)
    with History.open(".judgekit/history.sqlite") as db:
        recheck = later.model_copy(update={"criteria": [later.criterion(criterion)]})
        (run,) = db.record(recheck, "recheck")
        db.found_drift(run)


def test_a_time_the_caller_gives_does_not_undo_a_rechecks_finding(project, monkeypatch):
    """The history found the judge changed: its cached answers are asked again, whatever older
    time `Options.changed_at` says (the later of the two counts)."""
    _split_project(project)
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=Path("cache"), split="dev"
    )
    with served(project, monkeypatch) as server:
        _cached_then_found_changed(options)
        assert server.requests == 40  # the second run read the cache
        judgekit.calibrate(replace(options, changed_at={"says-blocked": 0.0}))
    assert server.requests == 80  # every cached answer predates the finding: asked again


def test_a_run_that_keeps_no_history_still_heeds_what_its_rechecks_found(project, monkeypatch):
    """`keep_history=False` adds nothing to the history, but a judge a recheck found changed is
    asked again (was: the history not read, its stale cached answers counted)."""
    _split_project(project)
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=Path("cache"), split="dev"
    )
    with served(project, monkeypatch) as server:
        _cached_then_found_changed(options)
        judgekit.calibrate(replace(options, keep_history=False))
    assert server.requests == 80


def test_a_finding_on_one_criterion_is_not_undone_by_another_in_the_same_run(project, monkeypatch):
    """One age for the run's cached answers: the latest finding's (was: the earliest, so a
    criterion found changed long ago, or a time the caller named for another one, let the
    changed judge's stale answers count)."""
    _split_project(project)
    project.criterion(llm_criterion("other", judge={"model": "openai/judge"}))
    project.jsonl("other", [{**r, "split": "dev"} for r in balanced(20, 20, prefix="o")])
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=Path("cache"), split="dev"
    )
    with served(project, monkeypatch) as server:
        _cached_then_found_changed(options)  # says-blocked found changed, not other
        assert server.requests == 80  # two criteria, the second run from the cache
        judgekit.calibrate(replace(options, changed_at={"other": 0.0}))
    assert server.requests >= 120  # says-blocked's 40 answers predate its finding: asked again


def test_another_verdict_file_of_a_recorded_judge_is_a_look(project):
    """A recorded judge is its verdicts: a re-export that flips some, under the same criterion
    and model, measured on the test split spends a look (was: none, the fingerprint alone was
    compared)."""
    _split_project(project)
    rows = [*balanced(20, 20), *balanced(20, 20, prefix="t")]
    verdicts = project.root / "verdicts.jsonl"

    def export(flipped: int) -> None:
        verdicts.write_text(
            "".join(
                json.dumps({"id": r["id"], "passed": r["passed"] != (i < flipped)}) + "\n"
                for i, r in enumerate(rows)
            )
        )

    options = Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=verdicts)
    export(0)
    judgekit.calibrate(options)
    judgekit.calibrate(options)  # the same file again: no change
    with History.open(".judgekit/history.sqlite") as db:
        assert db.looks("says-blocked") == []
    export(10)
    judgekit.calibrate(options)
    judgekit.calibrate(options)  # seen: not a second look
    with History.open(".judgekit/history.sqlite") as db:
        (look,) = db.looks("says-blocked")
    assert look.purpose == "calibrate" and len(look.examples) == 40


def test_a_verdict_file_is_never_first_calibrated_in_the_future(project):
    from datetime import UTC, datetime

    from judgekit.inputs.pair import file_digest

    _split_project(project)
    verdicts = project.root / "verdicts.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"id": r["id"], "passed": r["passed"]}) + "\n"
            for r in [*balanced(20, 20), *balanced(20, 20, prefix="t")]
        )
    )
    ahead = {file_digest(verdicts): time.time() + 3e8}  # ten years ahead
    options = Options(
        criteria_dir=project.criteria,
        sets_dir=project.sets,
        verdicts=verdicts,
        recorded_times=ahead,
    )
    report = judgekit.calibrate(options)
    assert report.criterion("says-blocked").evidence_at <= datetime.now(UTC)


@pytest.mark.asyncio
async def test_the_awaited_form_records_into_the_history_it_is_given(project, tmp_path):
    _split_project(project)
    named = tmp_path / "elsewhere" / "history.sqlite"
    named.parent.mkdir()
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None, history=named
    )
    await judgekit.acalibrate(options, llm=_scripted())
    project.criterion(llm_criterion(judge={"model": "openai/judge"}, pass_when="edited"))
    await judgekit.acalibrate(options, llm=_scripted())
    with History.open(named) as db:
        assert len(db.runs("says-blocked", "calibrate")) == 2 and len(db.looks("says-blocked")) == 1
    assert not Path(".judgekit/history.sqlite").exists()


def test_the_python_api_without_a_history_refuses_test_examples(project):
    _split_project(project)
    llm = _scripted()
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None, keep_history=False
    )
    with pytest.raises(InputError) as refused:
        judgekit.calibrate(options, llm=llm)
    assert llm.calls == 0  # refused before any judge is paid for
    message = str(refused.value)
    assert "40 test-split examples: measuring criterion 'says-blocked'" in message
    assert "keep_history=True" in message and 'split="dev"' in message
    dev = judgekit.calibrate(replace(options, split="dev"), llm=llm)
    assert dev.criterion("says-blocked").n == 40 and llm.calls == 40
    assert not Path(".judgekit/history.sqlite").exists()  # nothing kept, as asked


# 4. compare --adopt


SHORT = "Blocked?"


def _compare_project(project) -> None:
    project.criterion(llm_criterion(judge={"model": "openai/gpt-4o"}))
    variants = project.criteria / "variants"
    variants.mkdir()
    (variants / "says-blocked.short.yaml").write_text(
        yaml.safe_dump(llm_criterion(question=SHORT, judge={"model": "openai/gpt-4o"}))
    )
    rows = [{**r, "split": "dev"} for r in balanced(20, 20)]
    rows += [{**r, "split": "test"} for r in balanced(20, 20, prefix="t")]
    project.jsonl("says-blocked", rows)


def test_compare_adopt_on_a_spent_test_budget_is_refused(project, monkeypatch):
    _compare_project(project)
    variant = str(project.criteria / "variants" / "says-blocked.short.yaml")
    args = ["compare", "-c", "says-blocked", "--variant", variant, "--split", "test"]
    before = (project.criteria / "says-blocked.yaml").read_text()
    from judgekit.inputs.heldout import in_test_split, named_by_identity

    criteria, sets = load_inputs(project.criteria, project.sets)
    tests = named_by_identity(criteria[0], in_test_split(sets["says-blocked"].examples))
    with History.open(".judgekit/history.sqlite") as db:
        for _ in range(MAX_LOOKS):  # every look of the test split's budget spent
            assert db.take_look("says-blocked", tests, 0.05, "improve")[1] is not None
    with served(project, monkeypatch):
        done = invoke(*args, "--adopt", "short")
    assert done.exit_code == 3, done.output
    assert "the test split's alpha budget is spent" in done.output
    assert "nothing adopted" in done.output
    assert (project.criteria / "says-blocked.yaml").read_text() == before


def test_compare_adopt_without_a_held_out_look_says_so(project, monkeypatch):
    _compare_project(project)
    variant = str(project.criteria / "variants" / "says-blocked.short.yaml")
    with served(project, monkeypatch):
        done = invoke("compare", "-c", "says-blocked", "--variant", variant, "--adopt", "short")
    assert done.exit_code == 0, done.output
    assert "on the data it was measured on" in done.output
    report = json.loads(REPORT.read_text())["criteria"][0]
    assert any("on the data it was measured on" in w for w in report["warnings"])
    with History.open(".judgekit/history.sqlite") as db:
        (look,) = db.looks("says-blocked")  # its figures included the test split's: a look
    assert look.purpose == "compare"


# 8. Labels with provenance.


def _labelled_by(project, made_by: str | None, n: int = 20) -> None:
    rows = balanced(n, n)
    if made_by is not None:
        rows = [{**r, "made_by": made_by} for r in rows]
    project.jsonl("says-blocked", rows)


def test_labels_a_model_made_are_refused_as_ground_truth_unless_the_policy_says(
    project, monkeypatch
):
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    _labelled_by(project, "model:anthropic/claude-3-5-sonnet")
    with served(project, monkeypatch):
        refused = invoke("calibrate", "-q", "--gate")
        assert refused.exit_code == 1
        assert "40 by model:anthropic/claude-3-5-sonnet" in refused.output
        Path("judgekit.yaml").write_text(
            yaml.safe_dump({"gate": {"label_sources": ["human", "adjudicated", "model"]}})
        )
        allowed = invoke("gate", "--config", "judgekit.yaml")
        assert allowed.exit_code == 0, allowed.output


def test_labels_made_by_the_judges_own_model_family_never_count(project, monkeypatch):
    project.criterion(llm_criterion(judge={"model": "openai/gpt-4o"}))
    _labelled_by(project, "model:gpt-4o-2024-08-06")
    Path("judgekit.yaml").write_text(
        yaml.safe_dump({"gate": {"label_sources": ["human", "adjudicated", "model"]}})
    )
    with served(project, monkeypatch):
        done = invoke("calibrate", "-q", "--gate", "--config", "judgekit.yaml")
    assert done.exit_code == 1 and "the judge's own model family" in done.output


def test_labels_without_provenance_are_assumed_human_and_the_report_says_so(project, monkeypatch):
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    rows = balanced(20, 20)
    rows[0] = {**rows[0], "made_by": "adjudicated", "annotator": "ana"}
    project.jsonl("says-blocked", rows)
    with served(project, monkeypatch):
        assert invoke("calibrate", "-q", "--gate").exit_code == 0
    report = json.loads(REPORT.read_text())["criteria"][0]
    assert report["labels_by"] == {"human (assumed)": 39, "adjudicated": 1}
    md = (REPORT.parent / "report.md").read_text()
    assert "Labels: 39 human (assumed)" in md and "the set does not say who made them" in md


def test_a_person_relabelling_a_models_label_makes_it_a_human_label(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(
        json.dumps({"id": "a", "output": "x", "passed": False, "made_by": "model:gpt-4o"}) + "\n"
    )
    write_label(path, "a", True)
    (record,) = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert record["passed"] is True and record["made_by"] == "human"


def test_history_records_how_a_changed_label_was_made(tmp_path):
    with History.open(tmp_path / "h.sqlite") as db:
        db.record_label_change("c", "a", False, True, "ana")
        db.record_label_change("c", "b", True, False, "ben", made_by="adjudicated")
        db.record_label_change("c", "d", True, False, "cy")
        # a change recorded before the history kept how labels were made says so, not "human"
        db.db.execute("UPDATE label_changes SET made_by = NULL WHERE example_id = 'd'")
        changes = db.label_changes("c")
    assert [(c.example, c.annotator, c.made_by) for c in changes] == [
        ("a", "ana", "human"),
        ("b", "ben", "adjudicated"),
        ("d", "cy", None),
    ]


def test_merging_a_copy_with_the_opposite_label_is_refused_and_changes_nothing(project):
    project.criterion(llm_criterion(inputs=["output"]))
    held = project.jsonl("says-blocked", balanced(3, 3))
    before = held.read_bytes()
    new = project.root / "new.jsonl"
    # p0's reply under another id and input, labelled the other way: one of the labels is wrong
    new.write_text(
        json.dumps({"id": "n1", "input": "other", "output": "reply-p0: blocked", "passed": False})
        + "\n"
    )
    args = ["label", "--merge", str(new), "-c", "says-blocked"]
    done = runner.invoke(app, args)
    assert done.exit_code == 2 and "id n1" in done.output and "as id p0" in done.output
    assert held.read_bytes() == before
    # the same label: merged, and counted once with p0
    new.write_text(
        json.dumps({"id": "n1", "input": "other", "output": "reply-p0: blocked", "passed": True})
        + "\n"
    )
    assert runner.invoke(app, args).exit_code == 0
    checked = invoke("validate")
    assert "n1 of p0" in checked.output and "ok: 1 criteria, 6 labelled examples" in checked.output


def test_plan_counts_each_example_once(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", _copied(20))
    done = invoke("plan")
    assert done.exit_code == 0, done.output
    assert "says-blocked known-good: 1 labelled" in done.output


# What an attacker's review of the first version found.


def test_a_report_that_names_no_copies_of_a_set_that_has_them_is_not_evidence(project, monkeypatch):
    """`"copies": {}` was believed: a report writer that did not count copies passed 40."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(20, 20) + _copied(2))
    with served(project, monkeypatch):
        assert invoke("calibrate", "-q", "--gate").exit_code == 0
    data = json.loads(REPORT.read_text())
    entry = data["criteria"][0]
    assert entry["copies"] == {"good": ["good#2"], "bad": ["bad#2"]}
    entry["copies"] = {}
    REPORT.write_text(json.dumps(data))
    done = invoke("gate")
    assert done.exit_code == 1 and "report.json's copies are not the set's" in done.output


def test_invisible_characters_and_case_do_not_make_a_copy_new():
    criterion = LLMCriterion(id="c", question="Is it blocked?", inputs=["output"])
    from judgekit.inputs.identity import identity

    plain = identity(criterion, {"output": "Your card is blocked."})
    for variant in (
        "Your card\u200b is blocked.",
        "\ufeffYour card is blocked.",
        "YOUR CARD IS BLOCKED.",
        # Unicode's other default-ignorable characters, which render as nothing either
        "Your card is blocked.\u034f",
        "Your card is blocked.\ufe0f",
        "Your card\U000e0101 is blocked.",
        "Your card is blocked.\u3164",
        "Your card is blocked.\uffa0",
        "Your card\u180b is blocked.",
        "Your card is blocked.\u17b4",
        "Your card is\u2800blocked.",  # a blank pattern, shown as a space
    ):
        assert identity(criterion, {"output": variant}) == plain, variant


def test_a_shot_shows_only_its_criterion_s_inputs_so_a_prompt_slot_beside_them_hides_no_leak():
    """A prompt naming {{input}} beside `inputs: [output]` made every identity read the input,
    while shots show the output alone (improve's few_shot makes them so): a set example whose
    reply the judge was shown with its answer counted as held out."""
    from judgekit.improve.proposals import few_shot
    from judgekit.inputs.heldout import held_out, leaked
    from judgekit.judging.prompts import prompt_template

    prompt = "Customer: {{input}}\n{{examples}}\nReply: {{output}}\nAnswer in JSON."
    criterion = LLMCriterion(
        id="c", question="Is it blocked?", inputs=["output"], judge={"prompt": prompt}
    )
    dev = [
        Example(id="a", input="lost card", output="It is blocked.", passed=True),
        Example(id="b", input="lost card", output="Nothing was done.", passed=False),
    ]
    shown = few_shot(criterion, dev, [], 2)
    assert [s.input for s in shown.examples] == [None, None]
    assert all(s.output in prompt_template(shown)[1]["content"] for s in shown.examples)
    assert sorted(leaked(shown, dev)) == ["a", "b"]
    assert held_out(shown, dev) == []
    # A hand-written shot with an input the judge is not shown leaks onto the same reply too.
    written = criterion.model_copy(
        update={
            "examples": [FewShot(input="another question", output="It is blocked.", passed=True)]
        }
    )
    assert leaked(written, dev) == ["a"]


def test_the_fields_a_custom_prompt_names_are_part_of_the_identity():
    from judgekit.inputs.identity import identity, shown

    criterion = LLMCriterion(
        id="c",
        question="Is the answer right?",
        inputs=["output"],
        judge={"prompt": "Question: {{input}}\nAnswer: {{output}}\nRight?"},
    )
    assert shown(criterion) == ("input", "output")
    assert identity(criterion, {"input": "2+2", "output": "4"}) != identity(
        criterion, {"input": "3+1", "output": "4"}
    )


# Identities are stored (the test split's looks, the history): the fast digester of a whole set
# must give the very digest `canonical_hash` gives of the mapping it stands for.
_TEXTS = st.one_of(
    st.none(),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.sampled_from(['"quoted"\\', "tab\there\nline", "é ﬁ Ｆ", "\u200bzero", "\x00\x1f"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries({"input": _TEXTS, "context": _TEXTS, "output": _TEXTS}),
    st.sampled_from(["llm", "llm-all", "regex", "claims"]),
)
def test_an_examples_identity_is_the_canonical_hash_of_what_its_judge_is_shown(fields, kind):
    from judgekit.fingerprint import canonical_hash
    from judgekit.inputs.criteria import ClaimsCriterion, RegexCriterion
    from judgekit.inputs.identity import identifier, identity, shown
    from judgekit.inputs.text import normal_text

    criterion = {
        "llm": LLMCriterion(id="c", question="Is it polite?", inputs=["output"]),
        "llm-all": LLMCriterion(
            id="c", question="Is it polite?", inputs=["output", "input", "context"]
        ),
        "regex": RegexCriterion(
            id="c",
            kind="regex",
            question="Has a number?",
            pattern=r"\d",
            match_means="pass",
            field="input",
        ),
        "claims": ClaimsCriterion(id="c", kind="claims", question="Is it supported?"),
    }[kind]
    exact = kind == "regex"
    values = {
        name: text if exact else normal_text(text)
        for name in shown(criterion)
        if (text := "" if fields[name] is None else str(fields[name]))
    }
    expected = canonical_hash({"read by": "code" if exact else "model", "shown": values})[:16]
    assert identity(criterion, fields) == expected
    assert identifier(criterion)(fields) == expected


def test_editing_a_criterions_inputs_does_not_open_a_fresh_budget(project):
    from judgekit.inputs.heldout import in_test_split, named_by_identity

    _split_project(project)
    criteria, sets = load_inputs(project.criteria, project.sets)
    tests = named_by_identity(criteria[0], in_test_split(sets["says-blocked"].examples))
    with History.open(".judgekit/history.sqlite") as db:
        for _ in range(MAX_LOOKS):
            assert db.take_look("says-blocked", tests, 0.05, "improve")[1] is not None
    for inputs in (["output"], ["context", "output"], ["input", "context", "output"]):
        project.criterion(llm_criterion(judge={"model": "openai/judge"}, inputs=inputs))
        criteria, sets = load_inputs(project.criteria, project.sets)
        renamed = named_by_identity(criteria[0], in_test_split(sets["says-blocked"].examples))
        with History.open(".judgekit/history.sqlite") as db:
            budget, look = db.take_look("says-blocked", renamed, 0.05, "improve")
        assert look is None and budget.look is None, inputs


def test_a_new_history_file_is_no_fresh_start_for_a_changed_judge(project, monkeypatch):
    _split_project(project)
    with served(project, monkeypatch):
        assert invoke("calibrate", "-q").exit_code == 0
        project.criterion(llm_criterion(judge={"model": "openai/judge"}, pass_when="edited"))
        assert invoke("calibrate", "-q", "--history", "throwaway.sqlite").exit_code == 0
    with History.open("throwaway.sqlite") as db:
        (look,) = db.looks("says-blocked")  # the report on disk was of another judge
    assert look.purpose == "calibrate"


def test_a_changed_pattern_measured_on_test_examples_is_a_look(project):
    def regex(pattern: str) -> dict:
        return {
            "id": "no-email",
            "kind": "regex",
            "question": "Is the reply free of email addresses?",
            "pattern": pattern,
            "match_means": "fail",
        }

    project.criterion(regex(r"\w+@\w+"))
    rows = [
        {
            "id": f"{s}{i}",
            "output": f"write to {s}{i}@b.org" if i % 2 else f"fine {s} {i}",
            "passed": i % 2 == 0,
            "split": s,
        }
        for s in ("dev", "test")
        for i in range(40)
    ]
    project.jsonl("no-email", rows)
    assert invoke("calibrate", "-q").exit_code == 0
    project.criterion(regex(r"[\w.]+@[\w.]+"))
    assert invoke("calibrate", "-q").exit_code == 0
    with History.open(".judgekit/history.sqlite") as db:
        assert len(db.looks("no-email")) == 1


def test_compare_on_test_examples_is_a_look_without_adopt(project, monkeypatch):
    _compare_project(project)
    variant = str(project.criteria / "variants" / "says-blocked.short.yaml")
    with served(project, monkeypatch):
        done = invoke("compare", "-c", "says-blocked", "--variant", variant, "--split", "test")
    assert "measured on 40 test examples" in done.output, done.output
    with History.open(".judgekit/history.sqlite") as db:
        (look,) = db.looks("says-blocked")
    assert look.purpose == "compare"


def test_compare_refuses_a_candidate_shown_set_examples_as_shots(project, monkeypatch):
    _compare_project(project)
    shots = [
        {"output": r["output"], "input": r["input"], "passed": r["passed"]}
        for r in balanced(3, 3, prefix="t")
    ]
    leaky = project.criteria / "variants" / "says-blocked.leaky.yaml"
    leaky.write_text(
        yaml.safe_dump(llm_criterion(judge={"model": "openai/gpt-4o"}, examples=shots))
    )
    with served(project, monkeypatch) as server:
        done = invoke("compare", "-c", "says-blocked", "--variant", str(leaky))
        assert server.requests == 0
    assert done.exit_code == 2 and "6 of its few-shot examples are examples of" in done.output


def test_an_annotators_label_does_not_make_a_models_labels_human(tmp_path):
    path = tmp_path / "set.jsonl"
    record = {
        "id": "a",
        "output": "x",
        "labels": {"gpt4o": True, "claude": True},
        "made_by": "model:gpt-4o",
    }
    path.write_text(json.dumps(record) + "\n")
    write_label(path, "a", False, annotator="alice")
    (written,) = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert written["labels"]["alice"] is False and written["made_by"] == "model:gpt-4o"


def test_improve_write_on_a_yaml_set_writes_nothing_and_says_why(tmp_path, monkeypatch):
    rows = _rows(40, "dev") + _rows(100, "test", 1000)
    _improve_project(tmp_path, [])
    (tmp_path / "calibration_sets" / "blocked.jsonl").unlink()
    (tmp_path / "calibration_sets" / "blocked.yaml").write_text(yaml.safe_dump({"examples": rows}))
    monkeypatch.chdir(tmp_path)
    before = (tmp_path / "criteria" / "blocked.yaml").read_text()

    with FakeServer(_helped_by_shots) as server:
        done = invoke(
            "improve", "-c", "blocked", "--shots", "4", "--write", "--api-base", server.url
        )
    assert done.exit_code == 2 and "nothing was written" in done.output
    assert (tmp_path / "criteria" / "blocked.yaml").read_text() == before


def test_improve_write_keeps_the_records_it_takes_out_of_the_set_whole(tmp_path, monkeypatch):
    rows = [{**r, "tags": ["kept"]} for r in _rows(40, "dev")] + _rows(100, "test", 1000)
    _improve_project(tmp_path, rows)
    monkeypatch.chdir(tmp_path)

    with FakeServer(_helped_by_shots) as server:
        done = invoke(
            "improve", "-c", "blocked", "--shots", "4", "--write", "--api-base", server.url
        )
    assert done.exit_code == 0, done.output
    kept = [
        json.loads(line)
        for line in Path("calibration_sets/blocked.shots.jsonl").read_text().splitlines()
    ]
    assert len(kept) == 4 and all(r["tags"] == ["kept"] and r["input"] for r in kept)


def test_a_reply_drawn_twice_from_a_pool_is_two_units_a_plain_copy_one_and_a_place_twice_refused():
    """A pool's repeats are its units: a reply that comes twice in production and is drawn twice
    stands for its share twice (the pool's design weighs each); a copy without a selection
    record is the same evidence, counted once; and two records at one place of a stratum (a
    drawn record copied) are not one design. RELIABILITY.md's trust model says what a writer of
    the set can do beyond this."""
    from judgekit.inputs.identity import distinct
    from judgekit.inputs.sets import Selection
    from judgekit.stats.design import weights
    from judgekit.stats.drawn import DesignError, Drawn

    criterion = LLMCriterion(id="c", question="Is it blocked?", inputs=["output"])
    sizes = {"pass": 3, "fail": 2}

    def at(stratum: str, position: int) -> Selection:
        return Selection(pool="p", stratum=stratum, sizes=sizes, position=position)

    examples = [
        Example(id="d1", output="Blocked.", passed=True, selection=at("pass", 0)),
        Example(id="d2", output="blocked.", passed=True, selection=at("pass", 1)),
        Example(id="d3", output="Not blocked.", passed=False, selection=at("fail", 0)),
        Example(id="plain", output="Blocked.", passed=True),
    ]
    found = distinct(criterion, examples, "set.jsonl")
    assert found.kept == ("d1", "d2", "d3") and found.copies == {"d1": ("plain",)}

    def design(kept: list[Example]) -> list[float]:
        return weights([Drawn(*e.selection.as_tuple()) for e in kept if e.selection])

    assert design(examples[:3]) == pytest.approx([3 / 5 * 3 / 2] * 2 + [3 / 5 * 2])
    copied = Example(id="d1-again", output="Blocked.", passed=True, selection=at("pass", 0))
    with pytest.raises(DesignError, match="more than one reply drawn at place 0"):
        design([*examples[:3], copied])
