"""pytest plugin: block exactly the tests whose judges are not calibrated, and count what the
calibrated ones say.

    @pytest.mark.judged("card-block-confirmed", runs=5, min_passes=4)
    def test_lost_card_reply(judge):
        assert judge(reply_of_my_agent("I lost my card")).passed

With `--judgekit-gate` (or `judgekit_gate = true` in the ini file) the gate is checked once per
session; tests whose criteria are blocked do not run and report the gate's reason
(`judgekit_gate_action`: error (default), skip, or exit); unmarked tests run as usual. The
`judge` fixture gives a test a calibrated judge for its criterion, one that refuses to judge
when the gate blocks it, or when it is the agent's own model; a selectively judged criterion's
unsure verdict is escalated, and its test reported as "needs review" (`judgekit_escalated`).
`runs=N, min_passes=K` runs the test body N times and passes it when K runs passed every check
(judgekit.gate.counted);
`judgekit_min_scenario_pass_rate` fails a session whose share of passing scenarios is lower.
Nothing heavier than pytest is imported unless the gate or the fixture is used.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judgekit.gate.counted import check_counts
from judgekit.pytest_plugin.judging import (
    ESCALATED,
    NEEDS_REVIEW,
    RESULT,
    SAME_MODEL,
    check_gate,
    judge,
    repeat,
    task_of,
)
from judgekit.pytest_plugin.summary import (
    COLLECTOR,
    JUDGED,
    MAX_ESCALATED_SHARE,
    Collector,
    max_escalated_share,
    min_scenario_pass_rate,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

# hooks and the fixture pytest finds here
__all__ = [
    "judge",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

_BLOCKED = pytest.StashKey[str]()
ACTIONS = ("error", "skip", "exit")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judgekit", "judge calibration gate")
    group.addoption(
        "--judgekit-gate",
        action="store_true",
        default=None,
        help="run tests marked judged(...) only if their criteria pass the calibration gate",
    )
    group.addoption(
        "--judgekit-report",
        default=None,
        help="calibration report (default .judgekit/reports/latest)",
    )
    group.addoption(
        "--judgekit-config", default=None, help="gate policy file (judgekit.yaml or pyproject.toml)"
    )
    group.addoption(
        "--judgekit-record",
        default=None,
        metavar="FILE",
        help="append every verdict the judge fixture gave to FILE (JSONL) for `judgekit monitor`",
    )
    group.addoption(
        "--judgekit-record-text",
        action="store_true",
        default=False,
        help="with --judgekit-record, record each verdict's input, output and reason as well "
        "(off by default: they may hold sensitive text)",
    )
    parser.addini(
        "judgekit_gate", type="bool", default=False, help="check the judgekit gate at session start"
    )
    parser.addini(
        "judgekit_gate_action", default="error", help="blocked tests: error, skip or exit"
    )
    parser.addini(
        "judgekit_report", default=".judgekit/reports/latest", help="calibration report path"
    )
    parser.addini("judgekit_criteria", default="criteria", help="folder of criterion files")
    parser.addini("judgekit_sets", default="calibration_sets", help="folder of calibration sets")
    parser.addini(
        "judgekit_min_scenario_pass_rate",
        default="",
        help="fail the session when a smaller share of judged scenarios passed (e.g. 0.9)",
    )
    parser.addini(
        "judgekit_agent_model",
        default="",
        help="the model of the agent under test: no judge of the same model may grade it",
    )
    parser.addini(
        "judgekit_same_model",
        default="refuse",
        help="a judge of the agent's own model: refuse or warn",
    )
    parser.addini(
        "judgekit_escalated",
        default="skip",
        help="a verdict escalated by selective judging: the test is "
        "skipped as 'needs review' (skip) or fails (error)",
    )
    parser.addini(
        "judgekit_max_escalated_share",
        default=str(MAX_ESCALATED_SHARE),
        help="fail the session when a larger share of its verdicts was escalated to a person "
        f"(default {MAX_ESCALATED_SHARE}; 1 allows any share)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "judged(*criterion_ids, trial='trial', runs=1, min_passes=runs, "
        "agent_model=None): verdicts in this test come from these criteria's judges; "
        "with the judgekit gate on, it runs only if they are calibrated; runs=N runs "
        "the body N times and passes when min_passes runs passed every check; "
        "instances parametrized over `trial` are trials of one task",
    )
    action = config.getini("judgekit_gate_action")
    if action not in ACTIONS:
        raise pytest.UsageError(
            f"judgekit_gate_action = {action!r}; use one of {', '.join(ACTIONS)}"
        )
    same = config.getini("judgekit_same_model")
    if same not in SAME_MODEL:
        raise pytest.UsageError(
            f"judgekit_same_model = {same!r}; use one of {', '.join(SAME_MODEL)}"
        )
    escalated = config.getini("judgekit_escalated")
    if escalated not in ESCALATED:
        raise pytest.UsageError(
            f"judgekit_escalated = {escalated!r}; use one of {', '.join(ESCALATED)}"
        )
    # a bad value stops the session before any test runs
    min_scenario_pass_rate(config)
    max_escalated_share(config)
    if _enabled(config):
        config.stash[RESULT] = check_gate(config)
    if not hasattr(config, "workerinput"):
        collector = config.stash[COLLECTOR] = Collector(config)
        config.pluginmanager.register(collector, "judgekit-collector")
        record = config.getoption("--judgekit-record")
        if config.getoption("--judgekit-record-text") and not record:
            raise pytest.UsageError(
                "--judgekit-record-text records into the --judgekit-record file: "
                "give --judgekit-record FILE as well"
            )
        if record:  # opened now, so a bad path stops the session before any judge call is paid for
            try:
                # Held open for the whole session: the collector's pytest_unconfigure closes it.
                collector.record = open(Path(record), "a", encoding="utf-8")  # noqa: SIM115
            except OSError as error:
                raise pytest.UsageError(
                    f"--judgekit-record {record}: cannot be written ({error.strerror}); "
                    "give a file in an existing, writable folder"
                ) from None


def _enabled(config: pytest.Config) -> bool:
    flag = config.getoption("--judgekit-gate")
    return bool(flag) if flag is not None else bool(config.getini("judgekit_gate"))


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not _enabled(config):
        return None
    result = config.stash[RESULT]
    lines = [f"judgekit gate: {result.status} ({result.report_path})"]
    if result.agent_model:
        lines.append(f"  agent model: {result.agent_model}")
    return lines + [
        f"  {d.status:<12} {d.criterion}" + (f" (judge {d.model})" if d.model else "")
        for d in result.decisions
    ]


def _criteria_of(item: pytest.Item) -> list[str]:
    return [str(arg) for marker in item.iter_markers("judged") for arg in marker.args]


def _runs_of(item: pytest.Item) -> tuple[int, int] | None:
    """(runs, min_passes) of a `judged(..., runs=N)` test; None for a test that runs once."""
    kwargs = {k: v for m in item.iter_markers("judged") for k, v in m.kwargs.items()}
    if "runs" not in kwargs and "min_passes" not in kwargs:
        return None
    runs = kwargs.get("runs", 1)
    min_passes = kwargs.get("min_passes", runs)
    check_counts(runs, min_passes)
    return runs, min_passes


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            counts = _runs_of(item)
        except ValueError as error:
            item.stash[_BLOCKED] = f"judged(...): {error}"
            continue
        if counts is not None:
            repeat(item, *counts)
    if not _enabled(config):
        return
    result = config.stash[RESULT]
    action = config.getini("judgekit_gate_action")
    for item in items:
        ids = _criteria_of(item)
        blocked = result.blocked(ids) if ids else []
        if not blocked:
            continue
        reason = "judgekit gate blocked " + "; ".join(
            f"{d.criterion} ({d.status}: {d.summary})" for d in blocked
        )
        # an xdist worker may not exit the session
        if action == "exit" and not hasattr(config, "workerinput"):
            pytest.exit(reason, returncode=pytest.ExitCode.TESTS_FAILED)
        if action == "skip":
            item.add_marker(pytest.mark.skip(reason=reason))
        else:
            item.stash[_BLOCKED] = reason


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    """A test skipped because its verdict was escalated is its own outcome: "needs review"."""
    if (
        report.skipped
        and isinstance(report.longrepr, tuple)
        and len(report.longrepr) == 3
        and str(report.longrepr[2]).startswith(f"Skipped: {NEEDS_REVIEW}:")
    ):
        return NEEDS_REVIEW, "R", NEEDS_REVIEW.upper()
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    ids, reason = _criteria_of(item), item.stash.get(_BLOCKED, None)
    # Before any fixture: a test that raises before its judge is asked still counts. One the gate
    # blocks is the gate's error, not a scenario of the agent's.
    if ids and reason is None:
        item.user_properties.append((JUDGED, {"criteria": ids, "task": task_of(item)}))
    if reason is not None:
        pytest.fail(reason, pytrace=False)
