"""The base of every part of a report, and the selective-judging certificate a report states.

>>> Certificate(confidence="trials", min_agreement=0.9, delta=0.1, min_coverage=0.5, n=40).certified
False
"""

from __future__ import annotations

import math
from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field

from judgekit.inputs.policy import Selective
from judgekit.judging.selective import SOURCES, certificate, given
from judgekit.judging.verdicts import Verdict


class ReportPart(BaseModel):
    """A part of a report: judgekit's own output, read back. Unknown keys are ignored (not
    rejected) so that an older judgekit can read a report a newer one wrote."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Stage(ReportPart):
    """One judge of a selective cascade, certified on the examples that reach it."""

    model: str | None = None
    threshold: float | None = Field(None, description="Verdicts at or above this confidence are given; null: none.")
    agreement: float | None = Field(None, description="With the labels, on the verdicts it gives.")
    agreement_lower: float | None = Field(None, description="The exact one-sided bound that certified it.")
    covered: int = 0
    reaching: int = Field(0, description="Examples that reach this judge (every one for the first).")
    tpr: float | None = None
    tnr: float | None = None
    tested: int = Field(0, description="Thresholds tested, from the most confident down.")
    given: tuple[int, int, int, int] = Field((0, 0, 0, 0), description="tp, fp, tn, fn of the verdicts it gives: "
                                             "what a pass rate of its verdicts is corrected with.")


class Certificate(ReportPart):
    """Selective judging (gate policy `selective:`): the confidence threshold certified to agree
    with people on at least `min_agreement` of the verdicts given, with probability 1 - `delta`,
    and the share of examples given a verdict. The gate recomputes it from verdicts.jsonl."""

    confidence: str = Field(description="Its signal: trials, logprob or recorded (judgekit.judging.selective).")
    min_agreement: float
    delta: float
    min_coverage: float
    n: int
    stages: list[Stage] = Field(default_factory=list)
    covered: int = 0
    agreement: float | None = None
    coverage: float | None = None
    coverage_interval: tuple[float, float] | None = None
    statement: str | None = Field(None, description="In words, as the gate says it.")
    problem: str | None = Field(None, description="Why nothing could be certified, when no confidence was given.")

    @property
    def certified(self) -> bool:
        return any(s.threshold is not None for s in self.stages)


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def certificate_of(labels: Sequence[bool], stages: Sequence[Sequence[Verdict]], models: Sequence[str | None],
                   selective: Selective, source: str) -> Certificate:
    """The certificate of a criterion's judge (and those it escalates to) from their final verdicts."""
    base = Certificate(confidence=source, min_agreement=selective.min_agreement, delta=selective.delta,
                       min_coverage=selective.min_coverage, n=len(labels))
    found = certificate(labels, stages, selective)
    if found is None:
        return base.model_copy(update={"problem": f"a verdict has no confidence ({SOURCES[source]}): give the judge "
                                       "trials: 3 or more, or a provider that returns log-probabilities"})
    reaching = [c.n for c in found.stages]
    return base.model_copy(update={
        "stages": [Stage(model=model, threshold=c.threshold, agreement=_number(c.agreement),
                         agreement_lower=_number(c.agreement_lower), covered=c.covered, reaching=r, tpr=c.tpr,
                         tnr=c.tnr, tested=c.tested, given=g)
                   for c, model, r, g in zip(found.stages, models, reaching, given(labels, stages, found))],
        "covered": found.covered, "agreement": _number(found.agreement), "coverage": _number(found.coverage),
        "coverage_interval": found.coverage_interval, "statement": found.words()})
