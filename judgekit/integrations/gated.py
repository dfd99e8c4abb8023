"""What every adapter shares: the criterion's judge as calibrated, refused at once when the gate
blocks it, and a verdict as a runner reports it.

>>> from judgekit.judging.verdicts import Verdict
>>> graded("card", Verdict("-", None, abstention="unparseable")).state
'abstained'
>>> graded("card", Verdict("-", False, reason="no mention of the block")).line()
'judgekit card: FAIL: no mention of the block'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from judgekit.gate.decision import Gate
from judgekit.gate.guard import judge_for
from judgekit.inputs.criteria import RegexCriterion, load_criterion
from judgekit.judging.judge import Judge
from judgekit.judging.review import enqueue
from judgekit.judging.verdicts import Verdict
from judgekit.watch.findings import findings_of


@dataclass(frozen=True)
class Graded:
    """One reply graded: `state` is pass, fail, abstained (the judge gave no verdict), error (the
    judge could not be asked: its provider failed) or escalated (below the certified confidence
    threshold: a question for a person, queued for review)."""

    criterion: str
    state: str
    reason: str
    confidence: float | None = None

    @property
    def passed(self) -> bool | None:
        """True or False for a verdict; None when the judge abstained or escalated."""
        return {"pass": True, "fail": False}.get(self.state)

    def line(self) -> str:
        return f"judgekit {self.criterion}: {self.state.upper()}" + (
            f": {self.reason}" if self.reason else ""
        )


def graded(criterion_id: str, verdict: Verdict) -> Graded:
    """A judge's verdict as a runner reports it."""
    if verdict.escalated:
        state, reason = "escalated", verdict.reason or "needs review"
    elif verdict.passed is None:
        reason = verdict.abstention or "no verdict"
        state = "error" if reason.startswith("error") else "abstained"
    else:
        state, reason = ("pass" if verdict.passed else "fail"), verdict.reason or ""
    return Graded(criterion_id, state, reason.strip(), verdict.confidence)


class GatedJudge:
    """The criterion's judge as its calibration asked it, from the project at `project` (its
    criteria/, calibration_sets/, policy and `.judgekit/reports/latest`; `report` and `config`,
    when given, relative to it unless absolute). The gate is checked here, once: when it blocks the
    criterion (or its figures are another tool's verdicts) JudgeNotCalibrated is raised now, with
    the gate's reason, before anything is graded."""

    def __init__(
        self,
        criterion_id: str,
        project: str | Path = ".",
        report: str | Path | None = None,
        config: str | Path | None = None,
    ):
        self.criterion, self.root = criterion_id, Path(project)
        policy = self.root / config if config is not None else None
        path = self.root / (
            report if report is not None else Path(".judgekit", "reports", "latest")
        )
        # The gate, deciding also on what rechecks found in the project's history.
        findings = findings_of(None, policy, root=self.root)
        result = (
            Gate.from_project(
                self.root / "criteria",
                self.root / "calibration_sets",
                policy,
                [criterion_id],
                root=self.root,
            )
            .with_findings(findings)
            .check_path(path / "report.json" if path.is_dir() else path, [criterion_id])
        )
        self.judge: Judge = judge_for(
            load_criterion(self.root / "criteria" / f"{criterion_id}.yaml"),
            result,
            cache_dir=str(self.root / ".judgekit" / "cache"),
        )
        if self.judge.refusal is not None:
            raise self.judge.refusal

    @property
    def model(self) -> str | None:
        """The model the judge asks (the calibrated one); None for a criterion checked by code."""
        if isinstance(self.judge.criterion, RegexCriterion):
            return None
        asked = self.judge.setup
        return (asked.model if asked else None) or self.judge.criterion.judge.model

    @property
    def models(self) -> tuple[str, ...]:
        """Every model whose answer can decide a verdict: the judge's, and the one it escalates
        to."""
        if isinstance(self.judge.criterion, RegexCriterion):
            return ()
        after = self.judge.criterion.judge.escalate_to
        return tuple(m for m in (self.model, after.model if after is not None else None) if m)

    @property
    def fingerprint(self) -> str | None:
        """The calibrated judge's fingerprint (its criterion, prompt and model): changes with any
        of them."""
        return self.judge.setup.digest if self.judge.setup is not None else None

    async def grade(
        self, output: str, input: str | None = None, context: str | None = None
    ) -> Graded:
        """Grade one reply; an escalated reply joins the criterion's review queue."""
        return self._graded(
            await self.judge.acall(output, input=input, context=context), output, input, context
        )

    def grade_sync(
        self, output: str, input: str | None = None, context: str | None = None
    ) -> Graded:
        """`grade`, for a runner that calls synchronously (works inside a running event loop
        too)."""
        return self._graded(
            self.judge(output, input=input, context=context), output, input, context
        )

    def _graded(
        self, verdict: Verdict, output: str, input: str | None, context: str | None
    ) -> Graded:
        if verdict.escalated:
            enqueue(
                self.root, self.criterion, [{"input": input, "output": output, "context": context}]
            )
        return graded(self.criterion, verdict)
