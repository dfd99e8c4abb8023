"""Each test here reproduces a defect a review found, so it stays fixed."""

import json
from datetime import UTC

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError, ProviderRejects
from judgekit.gate import Gate
from judgekit.inputs.criteria import load_criterion
from judgekit.inputs.policy import Policy
from judgekit.judging.judge import Judge
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.report import Report
from judgekit.secrets import public_url
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion

runner = CliRunner()
VERDICTS = script({"reply-p": True, "reply-f": False})
FAST = RetryPolicy(attempts=3, base_s=0.01, cap_s=0.02, first_contact_attempts=2, down_after=3)


@pytest.fixture
def setup(project):
    project.criterion(llm_criterion())
    rows = balanced(25, 25)
    for i, row in enumerate(rows):
        row["split"] = "dev" if i % 2 else "test"
    project.jsonl("says-blocked", rows)
    return project


def test_trials_and_split_overrides_then_gate_pass(setup):
    with FakeServer(VERDICTS) as server:
        result = runner.invoke(
            app,
            [
                "calibrate",
                "--model",
                "openai/j",
                "--api-base",
                server.url,
                "--trials",
                "3",
                "--split",
                "dev",
                "--gate",
                "--config",
                str(_lenient(setup)),
            ],
        )
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "changed" not in result.output


def _lenient(project):
    path = project.root / "judgekit.yaml"
    path.write_text("gate:\n  min_examples: 10\n  min_tpr: 0.7\n  min_tnr: 0.7\n")
    return path


def test_override_problems_are_all_listed_with_their_place(setup):
    (setup.root / "judgekit.yaml").write_text(
        "gate:\n  min_tpr: 3\n  criteria:\n"
        "    says-blocked: {max_age: 30 days, min_tnr: 2}\n"
        "    typo-id: {min_tpr: 0.9}\n"
    )
    with pytest.raises(InputError) as caught:
        Policy.load(root=setup.root)
    text = str(caught.value)
    assert "gate.min_tpr" in text and "gate.criteria.says-blocked.max_age" in text
    assert "gate.criteria.says-blocked.min_tnr" in text
    (setup.root / "judgekit.yaml").write_text("gate:\n  criteria:\n    typo-id: {min_tpr: 0.9}\n")
    with pytest.raises(InputError, match=r"gate.criteria.typo-id: no criterion 'typo-id'"):
        Gate.from_project(setup.criteria, setup.sets)
    result = runner.invoke(app, ["gate"])
    assert result.exit_code == 2 and "typo-id" in result.output


def test_raw_answer_of_an_unreadable_reply_reaches_the_reports(setup, tmp_path):
    # unreadable when asked again too
    with FakeServer(VERDICTS, fail_first={"reply-p3:": ["garbage"] * 2}) as server:
        result = runner.invoke(
            app,
            ["calibrate", "--model", "openai/j", "--api-base", server.url, "--out", str(tmp_path)],
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    (d,) = [d for d in report["criteria"][0]["disagreements"] if d["id"] == "p3"]
    assert d["abstention"] == "unparseable" and d["raw"].startswith("Lorem ipsum")
    assert "raw answer: Lorem ipsum" in (tmp_path / "report.md").read_text()
    lines = [json.loads(x) for x in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    assert [x["raw"] for x in lines if x["id"] == "p3"][0].startswith("Lorem ipsum")


def test_judge_fixture_asks_as_calibration_did(setup, monkeypatch):
    with FakeServer(VERDICTS) as server:
        # the environment names the calibrated endpoint
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        report = measure(
            Options(
                criteria_dir=setup.criteria,
                sets_dir=setup.sets,
                model="openai/j",
                api_base=server.url,
                trials=3,
                cache_dir=setup.root / "cache",
            )
        )
        asked = server.requests
        judge = Judge(
            load_criterion(setup.criteria / "says-blocked.yaml"),
            report.criteria[0].judge.measured(),
            cache_dir=str(setup.root / "cache2"),
        )
        verdict = judge("reply-p99: blocked", input="lost card")
        assert verdict.passed is True
        assert server.requests == asked + 3  # the three trials, at the calibrated endpoint


def test_public_url_drops_credentials():
    shown = public_url("https://user:secret@host:8000/v1?key=abc")
    assert shown is not None and shown.startswith("https://host:8000/v1?<query:")
    assert "secret" not in shown and "abc" not in shown


def test_calibrating_one_criterion_keeps_the_others(setup):
    setup.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "TODO", "match_means": "fail"}
    )
    setup.jsonl(
        "r",
        [
            {"id": "a", "output": "fine", "passed": True},
            {"id": "b", "output": "TODO", "passed": False},
        ],
    )
    verdicts = setup.root / "v.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"id": r["id"], "passed": r["passed"], "criterion": "says-blocked"}) + "\n"
            for r in balanced(25, 25)
        )
    )
    assert runner.invoke(app, ["calibrate", "--verdicts", str(verdicts)]).exit_code == 0
    again = runner.invoke(app, ["calibrate", "-c", "r"])
    assert again.exit_code == 0 and "1 other criterion kept" in again.output
    report = Report.read(setup.root / ".judgekit/reports/latest")
    assert [c.id for c in report.criteria] == ["r", "says-blocked"]
    kept = (setup.root / ".judgekit/reports/latest/verdicts.jsonl").read_text()
    assert kept.count('"criterion":"says-blocked"') == 50 and kept.count('"criterion":"r"') == 2


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_every_request_refused_stops_the_run(setup, via):
    with (
        FakeServer(VERDICTS, faults={"bad_request": 1.0}) as server,
        pytest.raises(ProviderRejects, match="refused every request"),
    ):
        measure(
            Options(
                criteria_dir=setup.criteria,
                sets_dir=setup.sets,
                model="openai/no-such-model",
                api_base=server.url,
                cache_dir=None,
                retry=FAST,
                via=via,
                concurrency=2,
            )
        )
    assert server.requests <= FAST.down_after + 2


def test_verdict_file_of_other_criteria_with_a_regex_criterion(setup):
    setup.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "TODO", "match_means": "fail"}
    )
    setup.jsonl(
        "r",
        [
            {"id": "a", "output": "fine", "passed": True},
            {"id": "b", "output": "TODO", "passed": False},
        ],
    )
    verdicts = setup.root / "v.jsonl"
    verdicts.write_text(
        json.dumps({"id": "p0", "passed": True, "criterion": "says-blocked"}) + "\n"
    )
    result = runner.invoke(app, ["calibrate", "--verdicts", str(verdicts), "-c", "r"])
    assert result.exit_code == 0, result.output


def test_gate_and_plugin_start_without_heavy_imports(setup):
    import subprocess
    import sys

    code = (
        "import sys, runpy; sys.argv = ['judgekit', 'gate']\n"
        "try:\n"
        "    runpy.run_module('judgekit.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "import judgekit.pytest_plugin\n"
        "print('HEAVY', [m for m in ('litellm', 'sklearn', 'pandas', 'scipy', 'diskcache', 'numpy',"
        " 'aiohttp') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=setup.root
    ).stdout
    assert "HEAVY []" in out


def test_second_review_fixes(setup, tmp_path):
    from judgekit.errors import ProviderUnreachable
    from judgekit.llm.transports import OpenAICompatible

    # A partial run over a corrupt old verdicts.jsonl stops before judging, with the file named.
    out = setup.root / ".judgekit/reports/latest"
    setup.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "TODO", "match_means": "fail"}
    )
    setup.jsonl(
        "r",
        [
            {"id": "a", "output": "fine", "passed": True},
            {"id": "b", "output": "TODO", "passed": False},
        ],
    )
    assert runner.invoke(app, ["calibrate", "-c", "r"]).exit_code == 0
    (out / "verdicts.jsonl").write_text("{broken\n")
    broken = runner.invoke(app, ["calibrate", "-c", "r"])
    assert broken.exit_code == 2 and "verdicts.jsonl:line 1" in broken.output
    # Credentials in --api-base never reach the message of an unreachable provider.
    with pytest.raises(ProviderUnreachable) as caught:
        measure(
            Options(
                criteria_dir=setup.criteria,
                sets_dir=setup.sets,
                model="openai/j",
                criterion_ids=["says-blocked"],
                api_base="http://bob:s3cretPW@127.0.0.1:9/v1",
                cache_dir=None,
                retry=FAST,
            )
        )
    assert "s3cretPW" not in str(caught.value) and "127.0.0.1:9/v1" in str(caught.value)
    # A query in --api-base stays after the path.
    assert (
        OpenAICompatible("http://h:1/v1?api-version=2024")._endpoint
        == "http://h:1/v1/chat/completions?api-version=2024"
    )
    # Written reports are readable like any other file (not 0600).
    assert (out / "report.json").stat().st_mode & 0o044


def test_policy_is_read_from_the_project_root_however_criteria_are_named(setup):
    (setup.root / "judgekit.yaml").write_text("gate:\n  min_tpr: 0.99\n")
    relative = Gate.from_project(
        setup.criteria.relative_to(setup.root), setup.sets.relative_to(setup.root)
    )
    absolute = Gate.from_project(setup.criteria, setup.sets)
    assert relative.policy.defaults.min_tpr == absolute.policy.defaults.min_tpr == 0.99


def test_verdicts_with_a_split(setup):
    verdicts = setup.root / "v.jsonl"
    verdicts.write_text(
        "".join(json.dumps({"id": r["id"], "passed": r["passed"]}) + "\n" for r in balanced(25, 25))
    )
    c = measure(
        Options(criteria_dir=setup.criteria, sets_dir=setup.sets, verdicts=verdicts, split="dev")
    ).criteria[0]
    assert c.n == 25 and c.split == "dev"


def test_age_is_per_criterion_after_a_partial_run(setup):
    from datetime import datetime, timedelta

    setup.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "TODO", "match_means": "fail"}
    )
    setup.jsonl(
        "r",
        [
            {"id": "a", "output": "fine", "passed": True},
            {"id": "b", "output": "TODO", "passed": False},
        ],
    )
    assert runner.invoke(app, ["calibrate", "-c", "r"]).exit_code == 0
    # Make r's evidence 400 days old, consistently in the report and in its verdicts.
    then = (datetime.now(UTC) - timedelta(days=400)).isoformat()
    path = setup.root / ".judgekit/reports/latest/report.json"
    data = json.loads(path.read_text())
    data["criteria"][0]["calibrated_at"] = data["criteria"][0]["evidence_at"] = then
    path.write_text(json.dumps(data))
    lines = path.with_name("verdicts.jsonl")
    lines.write_text(
        "".join(
            json.dumps({**json.loads(line), "at": then}) + "\n"
            for line in lines.read_text().splitlines()
        )
    )
    verdicts = setup.root / "v.jsonl"
    verdicts.write_text(
        "".join(json.dumps({"id": r["id"], "passed": r["passed"]}) + "\n" for r in balanced(25, 25))
    )
    assert (
        runner.invoke(
            app, ["calibrate", "-c", "says-blocked", "--verdicts", str(verdicts)]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["gate", "-c", "r"])
    assert result.exit_code == 1 and "days old" in result.output
