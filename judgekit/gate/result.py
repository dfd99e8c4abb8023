"""What the gate decided: per criterion PASS, FAIL or INCONCLUSIVE with every reason, the overall
status and its exit code, and the error a blocked judge raises instead of grading.

>>> r = GateResult(
...     (Decision("a", "PASS", ("TPR 0.95",)), Decision("b", "INCONCLUSIVE", ("too few",)))
... )
>>> r.status, r.exit_code, [d.criterion for d in r.blocked(["a", "b", "c"])]
('INCONCLUSIVE', 3, ['b', 'c'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from judgekit.errors import JudgeNotCalibrated

Status = Literal["PASS", "FAIL", "INCONCLUSIVE"]
EXIT_CODES = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}


def worst(statuses: Sequence[Status]) -> Status:
    """FAIL when one is, else INCONCLUSIVE when one is, else PASS.

    >>> worst(["PASS", "INCONCLUSIVE"]), worst(["PASS", "FAIL", "INCONCLUSIVE"])
    ('INCONCLUSIVE', 'FAIL')
    """
    return next((s for s in ("FAIL", "INCONCLUSIVE") if s in statuses), "PASS")


@dataclass(frozen=True)
class Decision:
    """The gate's decision on one criterion, with every reason."""

    criterion: str
    status: Status
    reasons: tuple[str, ...]
    needed: dict[str, int] | None = None
    model: str | None = None  # the judge's model, as calibrated
    # tp, fp, tn, fn as recomputed from the verdicts (a selective judge's: of the verdicts it gives)
    confusion: tuple[int, int, int, int] | None = None
    # Selective judging: each judge's certified confidence threshold (the criterion's, then the one
    # it escalates to; None where none is certified). A verdict below them is escalated at run
    # time.
    thresholds: tuple[float | None, ...] | None = None
    # The report entry decided on, as the gate read and checked it (judgekit.report.reading): what a
    # runner builds its judge from, never a second read of the file.
    entry: Any = field(default=None, compare=False, repr=False)

    @property
    def summary(self) -> str:
        return "; ".join(self.reasons)


@dataclass(frozen=True)
class GateResult:
    """The decisions on every gated criterion, and the overall one."""

    decisions: tuple[Decision, ...]
    report_path: str | None = None
    agent_model: str | None = (
        None  # the agent's model, when declared: no judge may be of the same model
    )

    @property
    def status(self) -> Status:
        # no decision at all is no evidence: FAIL
        return worst([d.status for d in self.decisions]) if self.decisions else "FAIL"

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def decision(self, criterion_id: str) -> Decision | None:
        return next((d for d in self.decisions if d.criterion == criterion_id), None)

    def blocked(self, criterion_ids: list[str]) -> list[Decision]:
        """Decisions that block any of these criteria (an unknown criterion blocks too)."""
        out = []
        for cid in criterion_ids:
            d = self.decision(cid)
            out.append(
                d
                if d
                else Decision(
                    cid, "FAIL", (f"criterion {cid!r} was not gated: no criteria/{cid}.yaml",)
                )
            )
        return [d for d in out if d.status != "PASS"]

    def refusal(self, criterion_ids: list[str] | None = None) -> JudgeNotCalibrated | None:
        """The error a judge of these criteria (all when None) raises instead of grading, or
        None."""
        blocked = (
            self.blocked(criterion_ids)
            if criterion_ids is not None
            else [d for d in self.decisions if d.status != "PASS"]
        )
        if criterion_ids is None and not self.decisions:
            return JudgeNotCalibrated("FAIL", [])
        if not blocked:
            return None
        status = "FAIL" if any(d.status == "FAIL" for d in blocked) else "INCONCLUSIVE"
        return JudgeNotCalibrated(status, [(d.criterion, d.status, d.summary) for d in blocked])

    def raise_for_status(self) -> GateResult:
        """Raise JudgeNotCalibrated unless every criterion passed; return the result otherwise."""
        refusal = self.refusal()
        if refusal is not None:
            raise refusal
        return self

    def lines(self) -> list[str]:
        return [f"{d.status:<12} {d.criterion}: {d.summary}" for d in self.decisions]

    def to_dict(self) -> dict[str, Any]:
        """For scripts: the overall status, its exit code, and each decision with its reasons."""
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "report": self.report_path,
            "agent_model": self.agent_model,
            "decisions": [
                {
                    "criterion": d.criterion,
                    "status": d.status,
                    "reasons": list(d.reasons),
                    "needed": d.needed,
                    "judge_model": d.model,
                }
                for d in self.decisions
            ],
        }
