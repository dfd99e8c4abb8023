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
from judgekit.report.render import terminal_text
from judgekit.secrets import redact
from judgekit.stats.metrics import wilson
from judgekit.stats.pass_rates import corrected_pass_rate, suite_pass_k

# user property that carries a verdict from an xdist worker to the controller
PROPERTY = "judgekit_verdict"
SCENARIO = "judgekit_scenario"  # user property that carries a scenario's tally (JUnit shows it too)
# user property of every judged test, set before its fixtures: a test that raises before its judge
# is asked is still a scenario (and a trial) that did not pass
JUDGED = "judgekit_judged"
COLLECTOR = pytest.StashKey["Collector"]()


@dataclass
class JudgedTest:
    """One judged test (a scenario), as the reports of its phases (and reruns) show it."""

    outcome_ok: bool = True  # the test passed (or xpassed) in every attempt
    checks_ok: bool = True  # every check in it passed
    checks: int = 0
    tally: Scenario | None = None
    seen: int = 0  # user properties already counted: reruns carry the earlier ones again
    skipped: bool = False  # skipped (not xfailed) before its judge gave a verdict: not counted

    @property
    def passed(self) -> bool:
        """A run that raised, or gave no verdict, is not a pass; nor is one with a failed or
        undecided check."""
        if self.tally is not None:
            return self.tally.passed and self.outcome_ok
        return self.outcome_ok and self.checks > 0 and self.checks_ok

    def why_not(self) -> str:
        if self.checks:
            return "a check failed or abstained, or the test failed"
        if not self.outcome_ok:
            return "it raised before its judge gave a verdict"
        return "its judge gave no verdict"


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
            if n in (PROPERTY, SCENARIO, JUDGED)
        ]
        if judged is None and not fresh:
            return
        judged = self.tests.setdefault(report.nodeid, JudgedTest())
        judged.seen = len(properties)
        for name, found in fresh:
            # Each property holds the JSON object the plugin, the fixture or the scenario wrote
            # (judging.py).
            value = cast("dict[str, Any]", found)
            if name == JUDGED:  # a trial of its task for each of its criteria, verdict or none
                for criterion in value["criteria"]:
                    task = (criterion, value.get("task") or report.nodeid)
                    self.trials.setdefault(task, {}).setdefault(report.nodeid, [])
                continue
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
        if report.failed or (report.when == "call" and not report.passed):
            judged.outcome_ok = False  # raised (in a fixture too), xfailed, a rerun's failed try
        if report.skipped and not hasattr(report, "wasxfail") and not judged.checks:
            judged.skipped = True

    def scenarios(self) -> dict[str, bool]:
        """Each scenario (judged test) and whether it passed, by its own tally: one that raised or
        gave no verdict did not; one skipped before any verdict is not counted."""
        return {
            nodeid: judged.passed
            for nodeid, judged in self.tests.items()
            if judged.tally is not None or judged.checks or not judged.skipped
        }

    def verdicts(self) -> int:
        return sum(len(v) for v in self.by_criterion.values())

    def trial_passed(self, nodeid: str, verdicts: list[bool | None]) -> bool:
        """A trial passes when it gave verdicts, every one a pass, and the test did not raise."""
        return bool(verdicts) and all(v is True for v in verdicts) and self.tests[nodeid].passed

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


# A session may leave at most a fifth of its verdicts to a person: beyond that, the judge is not
# grading the suite, and a green run would say nothing about the replies.
MAX_ESCALATED_SHARE = 0.2


def max_escalated_share(config: pytest.Config) -> float:
    """`judgekit_max_escalated_share` from the ini file, checked."""
    text = str(config.getini("judgekit_max_escalated_share") or "").strip()
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0 <= share <= 1:
        raise pytest.UsageError(
            f"judgekit_max_escalated_share = {text!r}; give a share of at least 0 and at most 1, "
            f"like {MAX_ESCALATED_SHARE}"
        )
    return share


def escalated_short(config: pytest.Config) -> str | None:
    """Why the session has left too many verdicts to a person (None when it has not)."""
    collector = config.stash.get(COLLECTOR, None)
    if collector is None:
        return None
    owed, verdicts = sum(collector.escalated.values()), collector.verdicts()
    share = max_escalated_share(config)
    if not verdicts or owed / verdicts <= share:
        return None
    return (
        f"{owed} of {verdicts} verdicts escalated to a person ({owed / verdicts:.0%}), above "
        f"judgekit_max_escalated_share {share:.2f}"
    )


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
    short = suite_short(session.config) or escalated_short(session.config)
    if short and exitstatus in (
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
        _write(
            terminalreporter,
            _criterion_line(
                criterion_id, verdicts, report, collector.escalated.get(criterion_id, 0)
            ),
        )
        _pass_k_line(terminalreporter, collector, criterion_id)
    _scenario_lines(terminalreporter, collector, config)
    _owed_lines(terminalreporter, collector, config)


def _write(terminalreporter: Any, line: str, **markup: bool) -> None:
    """A summary line; a reason or an error from a model or an agent shown inert (`printable`)."""
    terminalreporter.write_line(terminal_text(line), **markup)


def _owed_lines(terminalreporter: Any, collector: Collector, config: pytest.Config) -> None:
    """Last: how many verdicts a person still owes, and whether that is more than the session may
    leave."""
    owed = {c: n for c, n in sorted(collector.escalated.items()) if n}
    if not owed:
        return
    short = escalated_short(config)
    if short:
        _write(terminalreporter, f"escalations: FAIL, {short}", red=True, bold=True)
    where = "; ".join(f"judgekit label -c {c} ({n})" for c, n in owed.items())
    total = sum(owed.values())
    _write(
        terminalreporter,
        f"judgekit: a person still owes {total} verdict{'s' if total != 1 else ''}: {where}",
        bold=True,
    )


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
    parametrized over `trial`); a trial passes when it gave verdicts, every one a pass, and did not
    raise (`Collector.trial_passed`)."""
    tasks = {
        task: {n: v for n, v in trials.items() if v or not collector.tests[n].skipped}
        for (cid, task), trials in collector.trials.items()
        if cid == criterion_id
    }
    results = [
        (len(trials), sum(collector.trial_passed(n, v) for n, v in trials.items()))
        for trials in tasks.values()
        if len(trials) >= 2
    ]
    if not results:
        return
    k = min(n for n, _ in results)
    rates = suite_pass_k(results, k)
    _write(
        terminalreporter,
        f"{criterion_id}: over {len(results)} task(s) with {k}+ trials, "
        f"pass@{k} {rates['pass@k']:.2f}, pass^{k} {rates['pass^k']:.2f}",
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
    _write(
        terminalreporter,
        f"steps: {len(verdicts)} checks judged, {sum(v is True for v in verdicts)} passed, "
        f"{sum(v is False for v in verdicts)} failed, {sum(v is None for v in verdicts)} abstained",
    )
    for judged in collector.tests.values():
        if judged.tally is not None:
            for line in judged.tally.lines():
                _write(terminalreporter, ("  " if line.startswith("  ") else "") + line)
    _write(
        terminalreporter,
        f"scenarios: {passed} of {len(scenarios)} passed ({passed / len(scenarios):.0%}, "
        f"95% {low:.0%}-{high:.0%})",
    )
    for nodeid, ok in scenarios.items():
        if not ok and collector.tests[nodeid].tally is None:
            _write(terminalreporter, f"  {nodeid}: failed ({collector.tests[nodeid].why_not()})")
    rate = min_scenario_pass_rate(config)
    if rate is not None:
        short = suite_short(config)
        _write(
            terminalreporter,
            f"suite: FAIL, {short}"
            if short
            else f"suite: PASS, at least {rate:.2f} of scenarios passed",
            red=bool(short),
            green=not short,
            bold=True,
        )
