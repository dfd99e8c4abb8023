"""Counted thresholds, step -> run -> scenario: a scenario runs several times (the agent is not
deterministic) and passes when at least `min_passes` of its runs passed every judged check in
them. A run with a failed, an abstained or no check at all, or one that raised, is not a pass.

The count is corrected for the judges' own errors where their calibration is known, by an exact
upper bound that assumes nothing about how the checks' errors go together
(judgekit.stats.scenarios.certified_upper); with one check per run the Rogan-Gladen estimate is
shown beside it. A scenario whose count meets the threshold while that bound lies below it passed
only through the judges' errors, and fails. (The Rogan-Gladen Wald interval is not used for the
decision: benchmarks/scenario_tally.py found its upper end too low 3% of the time, not 2.5%.)

For any runner, in plain Python:

    with judgekit.tally(runs=5, min_passes=4, name="lost card") as scenario:
        for run in scenario:
            with run:                    # an assertion or error ends this run, not the scenario
                reply = agent("I lost my card")
                assert run.judge(judge, reply, input="I lost my card").passed

Leaving the `with` raises ScenarioFailed (an AssertionError) with the tally when it did not pass.
The pytest plugin does the same for `@pytest.mark.judged("id", runs=5, min_passes=4)`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from judgekit.errors import JudgekitError
from judgekit.gate.decision import Gate
from judgekit.stats.metrics import wilson
from judgekit.stats.pass_rates import corrected_pass_rate
from judgekit.stats.scenarios import certified_upper


@dataclass(frozen=True)
class Check:
    """One judged check (a step): its criterion, the verdict (None: abstained), the judge's
    reason."""

    criterion: str
    passed: bool | None
    reason: str | None = None


@dataclass
class RunRecord:
    """One run of a scenario: its checks, and the error that ended it early, if any."""

    index: int
    checks: list[Check] = field(default_factory=list)
    error: str | None = None

    @property
    def abstained(self) -> int:
        return sum(1 for c in self.checks if c.passed is None)

    @property
    def passed(self) -> bool:
        return (
            self.error is None and bool(self.checks) and all(c.passed is True for c in self.checks)
        )

    def why(self) -> str:
        """Why the run did not pass."""
        why = [
            f"{c.criterion} {'abstained' if c.passed is None else 'failed'}"
            + (f" ({_short(c.reason)})" if c.reason else "")
            for c in self.checks
            if c.passed is not True
        ]
        if self.error is not None:
            why.append(f"raised {self.error}")
        return "; ".join(why) or "judged nothing"


@dataclass(frozen=True)
class JudgeCounts:
    """A criterion's calibration evidence: known-good passed of known-good, known-bad failed of
    known-bad."""

    tp: int
    good: int
    tn: int
    bad: int

    @classmethod
    def of(cls, confusion: tuple[int, int, int, int] | None) -> JudgeCounts | None:
        """From (tp, fp, tn, fn), as the gate recomputes them; None without both classes."""
        if confusion is None:
            return None
        tp, fp, tn, fn = confusion
        return cls(tp, tp + fn, tn, tn + fp) if tp + fn and tn + fp else None


@dataclass(frozen=True)
class Scenario:
    """A scenario's tally and decision."""

    name: str
    runs: tuple[RunRecord, ...]
    min_passes: int
    corrected: float | None = None  # the corrected pass rate (one check per run only)
    # of the corrected rate; (nan, upper) for a bound alone
    interval: tuple[float, float] | None = None
    note: str | None = None  # why the count was not corrected, or a warning about the correction

    @property
    def passes(self) -> int:
        return sum(1 for r in self.runs if r.passed)

    @property
    def abstained(self) -> int:
        """Runs with at least one abstained check."""
        return sum(1 for r in self.runs if r.abstained)

    @property
    def threshold(self) -> float:
        return self.min_passes / len(self.runs)

    @property
    def judge_error(self) -> bool:
        """The count meets the threshold, but the corrected rate's upper bound lies below it."""
        return only_through_judge_error(self.passes, self.min_passes, len(self.runs), self.interval)

    @property
    def passed(self) -> bool:
        return self.passes >= self.min_passes and not self.judge_error

    def headline(self) -> str:
        low, high = wilson(self.passes, len(self.runs))
        line = (
            f"{self.name}: {self.passes} of {len(self.runs)} runs passed every check "
            f"(needs {self.min_passes}; rate {self.passes / len(self.runs):.2f}, "
            f"95% {low:.2f}-{high:.2f})"
        )
        if self.abstained:
            line += f"; {self.abstained} run(s) with an abstained check, not counted as passes"
        if self.interval is not None:
            _, high_c = self.interval
            line += (
                f"; corrected for the judges {self.corrected:.2f}, at most {high_c:.2f} (95%)"
                if self.corrected is not None
                else f"; corrected for the judges at most {high_c:.2f} (95%)"
            )
        if self.judge_error:
            line += (
                f": meets {self.min_passes} of {len(self.runs)} only through the judges' errors "
                f"(the corrected rate's bound lies below {self.threshold:.2f})"
            )
        if self.note:
            line += f"; {self.note}"
        return line

    def lines(self) -> list[str]:
        """The headline, then each run that did not pass and why."""
        return [
            self.headline(),
            *(f"  run {r.index + 1}: {r.why()}" for r in self.runs if not r.passed),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "min_passes": self.min_passes,
            "passed": self.passed,
            "passes": self.passes,
            "abstained": self.abstained,
            "judge_error": self.judge_error,
            "corrected": self.corrected,
            "interval": list(self.interval) if self.interval else None,
            "note": self.note,
            "runs": [asdict(r) for r in self.runs],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        runs = tuple(
            RunRecord(r["index"], [Check(**c) for c in r["checks"]], r["error"])
            for r in data["runs"]
        )
        interval = data.get("interval")
        return cls(
            data["name"],
            runs,
            data["min_passes"],
            data.get("corrected"),
            tuple(interval) if interval else None,
            data.get("note"),
        )


def decide(
    name: str,
    runs: Sequence[RunRecord],
    min_passes: int,
    judges: Mapping[str, JudgeCounts | None] | None = None,
) -> Scenario:
    """The scenario's decision: the count, corrected where every criterion judged has its
    calibration in `judges`."""
    runs = tuple(runs)
    check_counts(len(runs), min_passes)
    criteria = sorted({c.criterion for r in runs for c in r.checks})
    if not criteria or judges is None:
        return Scenario(name, runs, min_passes)
    missing = [c for c in criteria if judges.get(c) is None]
    if missing:
        return Scenario(
            name, runs, min_passes, note=f"not corrected: no calibration of {', '.join(missing)}"
        )
    per_run = {c: max(sum(1 for k in r.checks if k.criterion == c) for r in runs) for c in criteria}
    # one check per run, bar runs that raised
    one_each = all(len(r.checks) == 1 or r.error for r in runs)
    passes = sum(1 for r in runs if r.passed)
    corrected, interval, note = correction(passes, len(runs), per_run, judges, one_each)  # type: ignore[arg-type]  # missing judges returned above
    return Scenario(name, runs, min_passes, corrected, interval, note)


def correction(
    passes: int,
    runs: int,
    per_run: Mapping[str, int],
    judges: Mapping[str, JudgeCounts],
    one_each: bool = True,
) -> tuple[float | None, tuple[float, float] | None, str | None]:
    """(corrected rate, (nan, its certified 95% upper bound), a note) for `passes` of `runs`
    judged passing, where `per_run` gives each criterion's most checks in one run. The rate, by
    Rogan-Gladen, only for one check of one criterion per run."""
    counts = [
        (judges[c].tp, judges[c].good, judges[c].tn, judges[c].bad, m)
        for c, m in sorted(per_run.items())
    ]
    bound = (float("nan"), certified_upper(passes, runs, counts))
    if len(per_run) == 1 and one_each and next(iter(per_run.values())) == 1:
        j = judges[next(iter(per_run))]
        rate = corrected_pass_rate(passes, runs, (j.tp, j.good), (j.tn, j.bad))
        if not rate.identifiable:
            return None, None, f"not corrected: {rate.warning}"
        return rate.corrected, bound, rate.warning
    return None, bound, None


def only_through_judge_error(
    passes: int, min_passes: int, runs: int, interval: tuple[float, float] | None
) -> bool:
    """The count meets the threshold, but the corrected rate's upper bound lies below it."""
    return (
        passes >= min_passes
        and interval is not None
        and not math.isnan(interval[1])
        and interval[1] < min_passes / runs
    )


def check_counts(runs: int, min_passes: int) -> None:
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs={runs!r}: give the number of runs, 1 or more")
    if (
        isinstance(min_passes, bool)
        or not isinstance(min_passes, int)
        or not 1 <= min_passes <= runs
    ):
        raise ValueError(f"min_passes={min_passes!r}: give a count from 1 to runs ({runs})")


class ScenarioFailed(AssertionError):
    """A scenario did not pass its counted threshold; the message is its tally."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        super().__init__("\n".join(scenario.lines()))


def is_run_failure(error: BaseException) -> bool:
    """Whether an error ends one run (an assertion, the agent failing) rather than the scenario:
    judgekit's own errors (a judge refused, a provider down, bad input) and the runner's control
    flow (skip, exit, interrupt) are no verdict on the agent, and propagate."""
    return isinstance(error, Exception) and not isinstance(error, JudgekitError)


def error_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {_short(text[0])}" if text else type(error).__name__


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ScenarioRun:
    """One run of a Tally: a context that records what ended it, and the checks judged in it."""

    def __init__(self, record: RunRecord):
        self.record = record

    def __enter__(self) -> ScenarioRun:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool:
        if error is None or not is_run_failure(error):
            return False
        self.record.error = error_line(error)
        return True

    def check(self, verdict: Any, criterion: str, reason: str | None = None) -> Any:
        """Record a verdict (a judgekit Verdict, or True / False / None for abstained) of
        `criterion`."""
        passed = getattr(verdict, "passed", verdict)
        if passed is not None and not isinstance(passed, bool):
            raise TypeError(
                f"a check is passed (True), failed (False) or abstained (None), not {passed!r}"
            )
        self.record.checks.append(
            Check(criterion, passed, reason or getattr(verdict, "reason", None))
        )
        return verdict

    def judge(
        self, judge: Any, output: str, input: str | None = None, context: str | None = None
    ) -> Any:
        """Ask a judgekit Judge and record its verdict."""
        return self.check(judge(output, input=input, context=context), judge.criterion.id)

    async def ajudge(
        self, judge: Any, output: str, input: str | None = None, context: str | None = None
    ) -> Any:
        return self.check(
            await judge.acall(output, input=input, context=context), judge.criterion.id
        )


class Tally:
    """A scenario of `runs` runs that passes when `min_passes` of them pass: iterate it for its
    runs, leave it (or call `check()`) for the decision."""

    def __init__(
        self,
        runs: int = 5,
        min_passes: int | None = None,
        name: str = "scenario",
        judges: Mapping[str, JudgeCounts | None] | None = None,
    ):
        self.min_passes = runs if min_passes is None else min_passes
        check_counts(runs, self.min_passes)
        self.runs, self.name, self.judges = runs, name, judges
        self.records: list[RunRecord] = []

    def __iter__(self) -> Iterator[ScenarioRun]:
        for index in range(self.runs):
            record = RunRecord(index)
            self.records.append(record)
            yield ScenarioRun(record)

    def __enter__(self) -> Tally:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> Literal[False]:
        if error is None:
            self.check()
        return False

    def result(self) -> Scenario:
        if len(self.records) != self.runs:
            raise ValueError(
                f"{self.name}: {len(self.records)} of {self.runs} runs ran; iterate the tally to "
                "the end"
            )
        return decide(self.name, self.records, self.min_passes, self.judges)

    def check(self) -> Scenario:
        """The decision; ScenarioFailed when the scenario did not pass."""
        scenario = self.result()
        if not scenario.passed:
            raise ScenarioFailed(scenario)
        return scenario


def calibrations(
    report: str | Path = ".judgekit/reports/latest",
    criteria: str | Path = "criteria",
    sets: str | Path = "calibration_sets",
    config: str | Path | None = None,
    root: Path = Path("."),
) -> dict[str, JudgeCounts | None]:
    """Each criterion's calibration evidence as the gate recomputes it from the report's verdicts
    (None where the report does not hold it), for correcting tallies."""
    gate = Gate.from_project(
        Path(criteria), Path(sets), Path(config) if config else None, root=root
    )
    return {d.criterion: JudgeCounts.of(d.confusion) for d in gate.check_path(report).decisions}


def tally(
    runs: int = 5,
    min_passes: int | None = None,
    name: str = "scenario",
    report: str | Path | None = ".judgekit/reports/latest",
    criteria: str | Path = "criteria",
    sets: str | Path = "calibration_sets",
) -> Tally:
    """A Tally whose count is corrected with the calibration in `report` (none: `report=None`)."""
    judges = None
    if report is not None and Path(criteria).is_dir():
        judges = calibrations(report, criteria, sets)
    return Tally(runs, min_passes, name, judges)
