"""pytest plugin: block exactly the tests whose judges are not calibrated.

    @pytest.mark.judged("card-block-confirmed")
    def test_lost_card_reply(judge):
        assert judge(reply_of_my_agent("I lost my card")).passed

With `--judgekit-gate` (or `judgekit_gate = true` in the ini file) the gate is checked once per
session; tests whose criteria are blocked do not run and report the gate's reason
(`judgekit_gate_action`: error (default), skip, or exit); unmarked tests run as usual. The
`judge` fixture gives a test a calibrated judge for its criterion, one that refuses to judge
when the gate blocks it. Nothing heavier than pytest is imported unless the gate or the fixture
is used: judgekit's gate and report packages load their modules on first use.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import judgekit.gate as gate_api
import judgekit.report as report_api
from judgekit.errors import JudgekitError
from judgekit.secrets import redact
from judgekit.stats.estimates import corrected_pass_rate, suite_pass_k

_RESULT = pytest.StashKey[Any]()
_BLOCKED = pytest.StashKey[str]()
_TALLY = pytest.StashKey["_Tally"]()
PROPERTY = "judgekit_verdict"  # user property that carries a verdict from an xdist worker to the controller
ACTIONS = ("error", "skip", "exit")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judgekit", "judge calibration gate")
    group.addoption("--judgekit-gate", action="store_true", default=None,
                    help="run tests marked judged(...) only if their criteria pass the calibration gate")
    group.addoption("--judgekit-report", default=None, help="calibration report (default .judgekit/reports/latest)")
    group.addoption("--judgekit-config", default=None, help="gate policy file (judgekit.yaml or pyproject.toml)")
    group.addoption("--judgekit-record", default=None, metavar="FILE",
                    help="append every verdict the judge fixture gave to FILE (JSONL) for `judgekit monitor`")
    group.addoption("--judgekit-record-text", action="store_true", default=False,
                    help="with --judgekit-record, record each verdict's input, output and reason as well "
                         "(off by default: they may hold sensitive text)")
    parser.addini("judgekit_gate", type="bool", default=False, help="check the judgekit gate at session start")
    parser.addini("judgekit_gate_action", default="error", help="blocked tests: error, skip or exit")
    parser.addini("judgekit_report", default=".judgekit/reports/latest", help="calibration report path")
    parser.addini("judgekit_criteria", default="criteria", help="folder of criterion files")
    parser.addini("judgekit_sets", default="calibration_sets", help="folder of calibration sets")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "judged(*criterion_ids, trial='trial'): verdicts in this test come from "
                                       "these criteria's judges; with the judgekit gate on, it runs only if they are "
                                       "calibrated; instances parametrized over `trial` are trials of one task")
    action = config.getini("judgekit_gate_action")
    if action not in ACTIONS:
        raise pytest.UsageError(f"judgekit_gate_action = {action!r}; use one of {', '.join(ACTIONS)}")
    if _enabled(config):
        config.stash[_RESULT] = _check(config)
    if not hasattr(config, "workerinput"):
        config.stash[_TALLY] = _Tally(config)
        config.pluginmanager.register(config.stash[_TALLY], "judgekit-tally")
        record = config.getoption("--judgekit-record")
        if config.getoption("--judgekit-record-text") and not record:
            raise pytest.UsageError("--judgekit-record-text records into the --judgekit-record file: "
                                    "give --judgekit-record FILE as well")
        if record:  # opened now, so a bad path stops the session before any judge call is paid for
            try:
                config.stash[_TALLY].record = open(Path(record), "a", encoding="utf-8")
            except OSError as error:
                raise pytest.UsageError(f"--judgekit-record {record}: cannot be written ({error.strerror}); "
                                        "give a file in an existing, writable folder") from None


def _enabled(config: pytest.Config) -> bool:
    flag = config.getoption("--judgekit-gate")
    return bool(flag) if flag is not None else bool(config.getini("judgekit_gate"))


def _path(config: pytest.Config, option: str | None, ini: str) -> Path:
    value = Path(option or config.getini(ini))
    return value if value.is_absolute() else config.rootpath / value


def _check(config: pytest.Config) -> Any:
    """The gate over every criterion in the project, read from disk once per process."""
    report_path = _path(config, config.getoption("--judgekit-report"), "judgekit_report")
    config_path = config.getoption("--judgekit-config")
    try:
        gate = gate_api.Gate.from_project(_path(config, None, "judgekit_criteria"), _path(config, None, "judgekit_sets"),
                                          Path(config_path) if config_path else None, root=config.rootpath)
        return gate.check_path(report_path)
    except JudgekitError as error:
        raise pytest.UsageError(f"judgekit gate: {error}") from None


def _result(config: pytest.Config) -> Any:
    if _RESULT not in config.stash:
        config.stash[_RESULT] = _check(config)
    return config.stash[_RESULT]


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not _enabled(config):
        return None
    result = config.stash[_RESULT]
    return [f"judgekit gate: {result.status} ({result.report_path})",
            *(f"  {d.status:<12} {d.criterion}" for d in result.decisions)]


def _task(item: pytest.Item) -> str:
    """The task a test instance is a trial of: its test with every parameter but the trial one
    (`trial`, or the name given as `judged(..., trial="run")`). Instances that differ in any other
    parameter are different tasks, not trials of one."""
    trial = next((m.kwargs["trial"] for m in item.iter_markers("judged") if "trial" in m.kwargs), "trial")
    params = getattr(getattr(item, "callspec", None), "params", {})
    if trial not in params:
        return item.nodeid  # not repeated: a task of one trial
    others = ",".join(f"{k}={v!r}" for k, v in sorted(params.items()) if k != trial)
    return f"{item.nodeid.split('[')[0]}[{others}]"


def _criteria_of(item: pytest.Item) -> list[str]:
    return [str(arg) for marker in item.iter_markers("judged") for arg in marker.args]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _enabled(config):
        return
    result = config.stash[_RESULT]
    action = config.getini("judgekit_gate_action")
    for item in items:
        ids = _criteria_of(item)
        blocked = result.blocked(ids) if ids else []
        if not blocked:
            continue
        reason = "judgekit gate blocked " + "; ".join(f"{d.criterion} ({d.status}: {d.summary})" for d in blocked)
        if action == "exit" and not hasattr(config, "workerinput"):  # an xdist worker may not exit the session
            pytest.exit(reason, returncode=pytest.ExitCode.TESTS_FAILED)
        if action == "skip":
            item.add_marker(pytest.mark.skip(reason=reason))
        else:
            item.stash[_BLOCKED] = reason


def pytest_runtest_setup(item: pytest.Item) -> None:
    reason = item.stash.get(_BLOCKED, None)
    if reason is not None:
        pytest.fail(reason, pytrace=False)


@pytest.fixture
def judge(request: pytest.FixtureRequest) -> Any:
    """A calibrated judge for the test's one `judged` criterion; it refuses to judge when blocked."""
    ids = _criteria_of(request.node)
    if len(ids) != 1:
        pytest.fail("the judge fixture needs exactly one criterion: @pytest.mark.judged('criterion-id')",
                    pytrace=False)
    config = request.config
    result = _result(config)
    try:
        judge = gate_api.judge_of(_path(config, None, "judgekit_criteria"), ids[0], result,
                                  cache_dir=str(config.rootpath / ".judgekit" / "cache"))
    except JudgekitError as error:
        pytest.fail(str(error), pytrace=False)

    return _Judged(judge, request.node, ids[0])


class _Judged:
    """The `judge` fixture: `judge(output, ...)`, or `await judge.acall(output, ...)` in an async
    test; each verdict goes on the test's report, so that under xdist the controller sees them."""

    def __init__(self, judge: Any, node: pytest.Item, criterion: str) -> None:
        self.judge, self.node, self.criterion = judge, node, criterion

    def __call__(self, output: str, input: str | None = None, context: str | None = None) -> Any:
        return self._tally(self.judge(output, input=input, context=context), output, input, context)

    async def acall(self, output: str, input: str | None = None, context: str | None = None) -> Any:
        return self._tally(await self.judge.acall(output, input=input, context=context), output, input, context)

    def _tally(self, verdict: Any, output: str, input: str | None, context: str | None) -> Any:
        value = {"criterion": self.criterion, "passed": verdict.passed, "task": _task(self.node)}
        if self.node.config.getoption("--judgekit-record-text"):  # opt-in: the texts may be sensitive
            value["text"] = {"input": input, "output": output, "context": context, "reason": verdict.reason}
        self.node.user_properties.append((PROPERTY, value))
        return verdict


class _Tally:
    """The judge fixture's verdicts, gathered where the session is reported (under xdist, the
    controller): each test's verdicts travel on its report's user properties."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.by_criterion: dict[str, list[bool | None]] = {}
        self.trials: dict[tuple[str, str], dict[str, list[bool | None]]] = {}
        self.record = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":  # once per test, after every verdict it gave
            return
        for name, value in report.user_properties:
            if name != PROPERTY:
                continue
            criterion, passed = value["criterion"], value["passed"]
            self.by_criterion.setdefault(criterion, []).append(passed)
            # Instances of a test parametrized over its trial parameter are trials of one task.
            task = (criterion, value.get("task") or report.nodeid)
            self.trials.setdefault(task, {}).setdefault(report.nodeid, []).append(passed)
            self._record(report.nodeid, criterion, passed, value.get("text"))

    def _record(self, nodeid: str, criterion: str, passed: bool | None, text: dict | None) -> None:
        """One JSONL row per verdict, in the shape `judgekit monitor` reads; with --judgekit-record-text,
        its input, output, context and reason too (secrets redacted, as everywhere judgekit writes)."""
        if self.record is None:
            return
        row = {"timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "criterion": criterion, "passed": passed, "trace_id": nodeid}
        row.update({k: redact(v) for k, v in (text or {}).items() if v is not None})
        self.record.write(json.dumps(row) + "\n")
        self.record.flush()

    def pytest_unconfigure(self) -> None:
        if self.record is not None:
            self.record.close()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """For each criterion the judge fixture was used for: the raw pass rate, and the rate
    corrected for the judge's measured TPR and TNR (judgekit.estimates.corrected_pass_rate)."""
    tally = config.stash.get(_TALLY, None)
    if tally is None or not tally.by_criterion:
        return
    report_path = (config.stash[_RESULT].report_path if _RESULT in config.stash else
                   _path(config, config.getoption("--judgekit-report"), "judgekit_report"))
    try:
        report = report_api.Report.read_if_any(report_path)
    except JudgekitError:
        report = None
    terminalreporter.section("judgekit: judged pass rates")
    for criterion_id, verdicts in sorted(tally.by_criterion.items()):
        decided = [v for v in verdicts if v is not None]
        passed = sum(decided)
        line = f"{criterion_id}: {passed} of {len(decided)} judged passing"
        if len(decided) < len(verdicts):
            line += f" ({len(verdicts) - len(decided)} abstained)"
        found = report.criterion(criterion_id) if report else None
        if decided and found and found.judge and found.judge.kind in ("llm", "claims"):
            c = found.confusion
            try:
                rate = corrected_pass_rate(passed, len(decided), (c.tp, c.tp + c.fn), (c.tn, c.tn + c.fp))
            except ValueError:
                rate = None
            if rate is not None and rate.identifiable:
                line += (f"; raw {rate.raw:.2f}, corrected for the judge {rate.corrected:.2f} "
                         f"(95% {rate.interval[0]:.2f}-{rate.interval[1]:.2f})")
            if rate is not None and rate.warning:
                line += f"; {rate.warning}"
        terminalreporter.write_line(line)
        _pass_k_line(terminalreporter, tally, criterion_id)


def _pass_k_line(terminalreporter: Any, tally: _Tally, criterion_id: str) -> None:
    """pass@k and pass^k over the criterion's tasks that ran as several trials (instances of a test
    parametrized over `trial`); a trial passes when every verdict the judge gave in it passed."""
    tasks = {task: trials for (cid, task), trials in tally.trials.items() if cid == criterion_id}
    results = [(len(trials), sum(1 for verdicts in trials.values() if verdicts and all(verdicts)))
               for trials in tasks.values() if len(trials) >= 2]
    if not results:
        return
    k = min(n for n, _ in results)
    rates = suite_pass_k(results, k)
    terminalreporter.write_line(f"{criterion_id}: over {len(results)} task(s) with {k}+ trials, "
                                f"pass@{k} {rates['pass@k']:.2f}, pass^{k} {rates['pass^k']:.2f}")
