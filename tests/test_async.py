"""judgekit where an event loop already runs (an async test, a notebook's kernel): the sync forms
work there, and the async forms (`acalibrate`, `Judge.acall`, the fixture's `acall`) can be awaited.
The notebook itself is executed by a real kernel in tests/in_test_split.py."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import balanced, llm_criterion

import judgekit
from judgekit.inputs.criteria import load_criterion
from judgekit.testing import FakeLLM


def _options(project) -> judgekit.Options:
    return judgekit.Options(
        criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
    )


SCRIPT = {"reply-p": True}  # every known-good reply passes, every known-bad one fails


@pytest.mark.asyncio
async def test_calibrate_and_judge_inside_a_running_loop(project):
    project.criterion(llm_criterion(judge={"model": "openai/j"}))
    project.jsonl("says-blocked", balanced(6, 6))
    # The sync form inside a running loop: asyncio.run would raise here.
    report = judgekit.calibrate(_options(project), llm=FakeLLM.scripted(SCRIPT, default=False))
    awaited = await judgekit.acalibrate(
        _options(project), llm=FakeLLM.scripted(SCRIPT, default=False)
    )
    assert report.criteria[0].metrics == awaited.criteria[0].metrics
    assert report.criteria[0].confusion.tp == 6 and report.criteria[0].confusion.tn == 6

    judge = judgekit.Judge(
        load_criterion(project.criteria / "says-blocked.yaml"),
        llm=FakeLLM.scripted(SCRIPT, default=False),
        cache_dir=None,
    )
    assert judge("reply-p9: blocked", input="lost card").passed is True
    assert (await judge.acall("reply-f9: not blocked", input="lost card")).passed is False


@pytest.mark.asyncio
async def test_the_guards_work_inside_a_running_loop(project):
    project.criterion(
        {
            "id": "clean",
            "kind": "regex",
            "question": "Free of TODO?",
            "pattern": "TODO",
            "match_means": "fail",
        }
    )
    project.jsonl(
        "clean",
        [
            {"id": f"g{i}", "output": f"done {i}" if i % 2 else f"TODO {i}", "passed": bool(i % 2)}
            for i in range(60)
        ],
    )
    report = judgekit.calibrate(
        judgekit.Options(criteria_dir=project.criteria, sets_dir=project.sets)
    )
    report.write(project.root / "out")
    result = judgekit.require_calibrated(
        "clean", report=project.root / "out", criteria=project.criteria, sets=project.sets
    )
    assert result.status == "PASS"
    judge = judgekit.calibrated_judge(
        "clean", report=project.root / "out", criteria=project.criteria, sets=project.sets
    )
    assert judge("all done").passed is True and (await judge.acall("TODO")).passed is False


ASYNC_SUITE = """
import pytest

@pytest.mark.judged("card")
@pytest.mark.asyncio
async def test_with_pytest_asyncio(judge):
    assert (await judge.acall("reply-p1")).passed is True
    assert judge("reply-f1").passed is False  # the sync form, inside the test's running loop

@pytest.mark.judged("card")
@pytest.mark.anyio
async def test_with_anyio(judge):
    assert (await judge.acall("reply-f2")).passed is False

@pytest.fixture
def anyio_backend():
    return "asyncio"
"""


def test_the_judge_fixture_in_async_tests(pytester, monkeypatch):
    """pytest-asyncio and anyio tests use the judge fixture: `await judge.acall(...)`, and
    `judge(...)` inside the running loop; their verdicts are tallied like any other."""
    from judgekit.pipeline import Options, measure
    from judgekit.testing import FakeServer, script

    root = pytester.path
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "card.yaml").write_text(
        yaml.safe_dump({"id": "card", "question": "Blocked?"})
    )
    rows = [{"id": f"g{i}", "output": f"reply-p{i}", "passed": True} for i in range(30)]
    rows += [{"id": f"b{i}", "output": f"reply-f{i}", "passed": False} for i in range(30)]
    (root / "calibration_sets" / "card.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    with FakeServer(script({"reply-p": True, "reply-f": False})) as server:
        report = measure(
            Options(
                criteria_dir=root / "criteria",
                sets_dir=root / "calibration_sets",
                model="openai/j",
                api_base=server.url,
                cache_dir=root / ".judgekit" / "cache",
            )
        )
        report.write(root / ".judgekit" / "reports" / "latest")
        # the tests' judge asks the calibrated endpoint where the environment names it
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        pytester.makepyfile(test_async_suite=ASYNC_SUITE)
        result = pytester.runpytest_subprocess("--judgekit-gate", "-p", "asyncio", "-p", "anyio")
    assert "cannot be called from a running event loop" not in result.stdout.str()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["card: 1 of 3 judged passing*"])
