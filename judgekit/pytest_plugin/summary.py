"""What the judged tests showed, gathered where the session is reported (under xdist, the
controller): each check (step), each scenario, the suite; the raw and corrected pass rates, pass@k
and pass^k; the suite's share of passing scenarios against `judgekit_min_scenario_pass_rate`; and
the rows `--judgekit-record` writes.

Each test's verdicts travel on its report's user properties, so workers need no channel of their
own. A scenario is a test marked `judged(..., runs=N)` (its tally travels whole), or any other
judged test that gave a verdict: it passes when the test passed and every check passed. Its own
tally decides, not the test's outcome, so xfail or a rerun that went green does not hide a failed
scenario from the suite's count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO, cast

import pytest

import judgekit.report as report_api
from judgekit.errors import JudgekitError
from judgekit.gate.counted import Scenario
from judgekit.pytest_plugin.paths import report_path
from judgekit.secrets import redact
from judgekit.stats.metrics import wilson
from judgekit.stats.pass_rates import corrected_pass_rate, suite_pass_k

# user property that carries a verdict from an xdist worker to the controller
PROPERTY = "judgekit_verdict"
SCENARIO = "judgekit_scenario"  # user property that carries a scenario's tally (JUnit shows it too)
COLLECTOR = pytest.StashKey["Collector"]()


@dataclass
class JudgedTest:
    """One judged test (a scenario), as the reports of its phases (and reruns) show it."""

    outcome_ok: bool = True  # the test passed (or xpassed) in every attempt
    checks_ok: bool = True  # every check in it passed
    checks: int = 0
    tally: Scenario | None = None
    seen: int = 0  # user properties already counted: reruns carry the earlier ones again


@dataclass(eq=False)  # registered as a plugin: hashed by identity
class Collector:
    """The verdicts and scenarios of the session, from the test reports."""

    config: pytest.Config
    by_criterion: dict[str, list[bool | None]] = field(default_factory=dict)
    trials: dict[tuple[str, str], dict[str, list[bool | None]]] = field(default_factory=dict)
    tests: dict[str, JudgedTest] = field(default_factory=dict)
    record: TextIO | None = None
    # per criterion: verdicts escalated to a person
    escalated: dict[str, int] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        judged = self.tests.get(report.nodeid)
        properties = list(report.user_properties)
        fresh = [
            (n, v)
            for n, v in properties[judged.seen if judged else 0 :]
            if n in (PROPERTY, SCENARIO)
        ]
        if judged is None and not fresh:
            return
        judged = self.tests.setdefault(report.nodeid, JudgedTest())
        judged.seen = len(properties)
        if report.when == "call" and not report.passed:
            judged.outcome_ok = False  # failed, xfailed, or a rerun's failed attempt
        for name, found in fresh:
            # Both properties hold the JSON object the fixture or the scenario wrote (judging.py).
            value = cast("dict[str, Any]", found)
            if name == SCENARIO:
                tally = Scenario.from_dict(value)
                judged.tally = (
                    tally if judged.tally is None or judged.tally.passed else judged.tally
                )
                continue
            criterion, passed = value["criterion"], value["passed"]
            if value.get("escalated"):
                self.escalated[criterion] = self.escalated.get(criterion, 0) + 1
            judged.checks += 1
            judged.checks_ok = judged.checks_ok and passed is True
            self.by_criterion.setdefault(criterion, []).append(passed)
            # Instances of a test parametrized over its trial parameter are trials of one task.
            task = (criterion, value.get("task") or report.nodeid)
            self.trials.setdefault(task, {}).setdefault(report.nodeid, []).append(passed)
            self._record(report.nodeid, criterion, passed, value.get("text"))

    def scenarios(self) -> dict[str, bool]:
        """Each scenario (judged test) and whether it passed, by its own tally."""
        out = {}
        for nodeid, judged in self.tests.items():
            if judged.tally is not None:
                out[nodeid] = judged.tally.passed and judged.outcome_ok
            elif judged.checks:
                out[nodeid] = judged.outcome_ok and judged.checks_ok
        return out

    def _record(
        self, nodeid: str, criterion: str, passed: bool | None, text: dict[str, str | None] | None
    ) -> None:
        """One JSONL row per verdict, in the shape `judgekit monitor` reads.

        With --judgekit-record-text, its input, output, context and reason too (secrets redacted,
        as everywhere judgekit writes).
        """
        if self.record is None:
            return
        row = {
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "criterion": criterion,
            "passed": passed,
            "trace_id": nodeid,
        }
        row.update({k: redact(v) for k, v in (text or {}).items() if v is not None})
        self.record.write(json.dumps(row) + "\n")
        self.record.flush()

    def pytest_unconfigure(self) -> None:
        if self.record is not None:
            self.record.close()


def min_scenario_pass_rate(config: pytest.Config) -> float | None:
    """`judgekit_min_scenario_pass_rate` from the ini file, checked (None when unset)."""
    text = str(config.getini("judgekit_min_scenario_pass_rate") or "").strip()
    if not text:
        return None
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not 0 < rate <= 1:
        raise pytest.UsageError(
            f"judgekit_min_scenario_pass_rate = {text!r}; give a share above 0 and at most 1, "
            "like 0.9"
        )
    return rate


def suite_short(config: pytest.Config) -> str | None:
    """Why the suite fails its scenario threshold (None when it does not, or none is set)."""
    collector = config.stash.get(COLLECTOR, None)
    rate = min_scenario_pass_rate(config)
    if collector is None or rate is None:
        return None
    scenarios = collector.scenarios()
    passed = sum(scenarios.values())
    if not scenarios:
        return (
            "no judged scenario ran, so none shows the suite clears "
            f"judgekit_min_scenario_pass_rate {rate:.2f}"
        )
    if passed / len(scenarios) < rate:
        return (
            f"{passed} of {len(scenarios)} judged scenarios passed "
            f"({passed / len(scenarios):.0%}), below judgekit_min_scenario_pass_rate {rate:.2f}"
        )
    return None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    if suite_short(session.config) and exitstatus in (
        pytest.ExitCode.OK,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Per criterion: the raw pass rate, and the rate corrected for the judge's measured TPR and
    TNR (judgekit.stats.pass_rates.corrected_pass_rate), pass@k and pass^k; then steps, scenarios
    and the suite."""
    collector = config.stash.get(COLLECTOR, None)
    if collector is None or not collector.tests:
        return
    report = _report(config)
    terminalreporter.section("judgekit: judged pass rates")
    for criterion_id, verdicts in sorted(collector.by_criterion.items()):
        terminalreporter.write_line(
            _criterion_line(
                criterion_id, verdicts, report, collector.escalated.get(criterion_id, 0)
            )
        )
        _pass_k_line(terminalreporter, collector, criterion_id)
    _scenario_lines(terminalreporter, collector, config)


def _report(config: pytest.Config) -> Any:
    try:
        return report_api.Report.read_if_any(report_path(config))
    except JudgekitError:
        return None


def _criterion_line(
    criterion_id: str, verdicts: list[bool | None], report: Any, escalated: int = 0
) -> str:
    """The raw pass rate, and the rate corrected for the judge's errors. For a selectively judged
    criterion the escalated verdicts are neither passes nor failures, and the correction uses the
    judge's errors on the verdicts it gives (those at or above its certified threshold)."""
    decided = [v for v in verdicts if v is not None]
    passed = sum(decided)
    line = f"{criterion_id}: {passed} of {len(decided)} judged passing"
    notes = (
        [f"{escalated} escalated: needs review (judgekit label -c {criterion_id})"]
        if escalated
        else []
    )
    if len(decided) + escalated < len(verdicts):
        notes.append(f"{len(verdicts) - len(decided) - escalated} abstained")
    line += f" ({'; '.join(notes)})" if notes else ""
    found = report.criterion(criterion_id) if report else None
    if decided and found and found.judge and found.judge.kind in ("llm", "claims"):
        given = [stage.given for stage in found.selective.stages] if found.selective else []
        counted = (found.confusion.tp, found.confusion.fp, found.confusion.tn, found.confusion.fn)
        tp, fp, tn, fn = (
            tuple(map(sum, zip(*given, strict=True)))
            if given
            # drawn by design: the weighted cells
            else tuple(round(x) for x in found.design.weighted)
            if found.design
            else counted
        )
        try:
            rate = corrected_pass_rate(passed, len(decided), (tp, tp + fn), (tn, tn + fp))
        except ValueError:
            rate = None
        if rate is not None and rate.identifiable:
            line += (
                f"; raw {rate.raw:.2f}, corrected for the judge {rate.corrected:.2f} "
                f"(95% {rate.interval[0]:.2f}-{rate.interval[1]:.2f})"
            )
        if rate is not None and rate.warning:
            line += f"; {rate.warning}"
    return line


def _pass_k_line(terminalreporter: Any, collector: Collector, criterion_id: str) -> None:
    """pass@k and pass^k over the criterion's tasks that ran as several trials (instances of a test
    parametrized over `trial`); a trial passes when every verdict the judge gave in it passed."""
    tasks = {
        task: trials for (cid, task), trials in collector.trials.items() if cid == criterion_id
    }
    results = [
        (len(trials), sum(1 for verdicts in trials.values() if verdicts and all(verdicts)))
        for trials in tasks.values()
        if len(trials) >= 2
    ]
    if not results:
        return
    k = min(n for n, _ in results)
    rates = suite_pass_k(results, k)
    terminalreporter.write_line(
        f"{criterion_id}: over {len(results)} task(s) with {k}+ trials, "
        f"pass@{k} {rates['pass@k']:.2f}, pass^{k} {rates['pass^k']:.2f}"
    )


def _scenario_lines(terminalreporter: Any, collector: Collector, config: pytest.Config) -> None:
    """Steps -> scenarios -> suite, with each scenario that ran several times and each that
    failed."""
    verdicts = [v for values in collector.by_criterion.values() for v in values]
    scenarios = collector.scenarios()
    if not scenarios:
        return
    passed = sum(scenarios.values())
    low, high = wilson(passed, len(scenarios))
    terminalreporter.section("judgekit: steps, scenarios, suite")
    terminalreporter.write_line(
        f"steps: {len(verdicts)} checks judged, {sum(v is True for v in verdicts)} passed, "
        f"{sum(v is False for v in verdicts)} failed, {sum(v is None for v in verdicts)} abstained"
    )
    for judged in collector.tests.values():
        if judged.tally is not None:
            for line in judged.tally.lines():
                terminalreporter.write_line(("  " if line.startswith("  ") else "") + line)
    terminalreporter.write_line(
        f"scenarios: {passed} of {len(scenarios)} passed ({passed / len(scenarios):.0%}, "
        f"95% {low:.0%}-{high:.0%})"
    )
    for nodeid, ok in scenarios.items():
        if not ok and collector.tests[nodeid].tally is None:
            terminalreporter.write_line(
                f"  {nodeid}: failed (a check failed or abstained, or the test failed)"
            )
    rate = min_scenario_pass_rate(config)
    if rate is not None:
        short = suite_short(config)
        terminalreporter.write_line(
            f"suite: FAIL, {short}"
            if short
            else f"suite: PASS, at least {rate:.2f} of scenarios passed",
            red=bool(short),
            green=not short,
            bold=True,
        )
