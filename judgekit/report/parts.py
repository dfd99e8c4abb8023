"""The base of every part of a report, its mappings by example id (held as built), the
selective-judging certificate a report states, and how a set drawn by design is measured (its
agreement, weighted, and the part that says so).

>>> Certificate(confidence="trials", min_agreement=0.9, delta=0.1, min_coverage=0.5, n=40).certified
False
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judgekit.errors import InputError
from judgekit.inputs.policy import Selective
from judgekit.inputs.sets import CalibrationSet
from judgekit.judging.selective import SOURCES, certificate, given
from judgekit.judging.verdicts import Verdict
from judgekit.stats.allocation import verify_design
from judgekit.stats.design import (
    PoolFigures,
    by_pool,
    design_calibration,
    weighted_cells,
    weights,
)
from judgekit.stats.drawn import DesignError, Drawn
from judgekit.stats.metrics import Calibration, calibration


class ReportPart(BaseModel):
    """A part of a report: judgekit's own output, read back. Unknown keys are ignored (not
    rejected) so that an older judgekit can read a report a newer one wrote."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class ById(dict[str, Any]):
    """A mapping by example id that judgekit built from checked values, which a report holds as
    built: pydantic would copy each of a million entries. Any other mapping given to the field is
    validated as the field says."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        checked = handler(source)  # the field's own type: Annotated[dict[...], ById]
        return core_schema.json_or_python_schema(
            json_schema=checked,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(cls), checked]),
        )


class Stage(ReportPart):
    """One judge of a selective cascade, certified on the examples that reach it."""

    model: str | None = None
    threshold: float | None = Field(
        None, description="Verdicts at or above this confidence are given; null: none."
    )
    agreement: float | None = Field(None, description="With the labels, on the verdicts it gives.")
    agreement_lower: float | None = Field(
        None, description="The exact one-sided bound that certified it."
    )
    covered: int = 0
    reaching: int = Field(
        0, description="Examples that reach this judge (every one for the first)."
    )
    tpr: float | None = None
    tnr: float | None = None
    tested: int = Field(0, description="Thresholds tested, from the most confident down.")
    given: tuple[int, int, int, int] = Field(
        (0, 0, 0, 0),
        description="tp, fp, tn, fn of the verdicts it gives: "
        "what a pass rate of its verdicts is corrected with.",
    )


class Certificate(ReportPart):
    """Selective judging (gate policy `selective:`): the confidence threshold certified to agree
    with people on at least `min_agreement` of the verdicts given, with probability 1 - `delta`,
    and the share of examples given a verdict. The gate recomputes it from verdicts.jsonl."""

    confidence: str = Field(
        description="Its signal: trials, logprob or recorded (judgekit.judging.selective)."
    )
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
    problem: str | None = Field(
        None, description="Why nothing could be certified, when no confidence was given."
    )

    @property
    def certified(self) -> bool:
        return any(s.threshold is not None for s in self.stages)


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def certificate_of(
    labels: Sequence[bool],
    stages: Sequence[Sequence[Verdict]],
    models: Sequence[str | None],
    selective: Selective,
    source: str,
) -> Certificate:
    """The certificate of a criterion's judge (and those it escalates to), from their final
    verdicts."""
    base = Certificate(
        confidence=source,
        min_agreement=selective.min_agreement,
        delta=selective.delta,
        min_coverage=selective.min_coverage,
        n=len(labels),
    )
    found = certificate(labels, stages, selective)
    if found is None:
        return base.model_copy(
            update={
                "problem": f"a verdict has no confidence ({SOURCES[source]}): give the judge "
                "trials: 3 or more, or a provider that returns log-probabilities"
            }
        )
    reaching = [c.n for c in found.stages]
    return base.model_copy(
        update={
            "stages": [
                Stage(
                    model=model,
                    threshold=c.threshold,
                    agreement=_number(c.agreement),
                    agreement_lower=_number(c.agreement_lower),
                    covered=c.covered,
                    reaching=r,
                    tpr=c.tpr,
                    tnr=c.tnr,
                    tested=c.tested,
                    given=g,
                )
                for c, model, r, g in zip(
                    found.stages, models, reaching, given(labels, stages, found), strict=True
                )
            ],
            "covered": found.covered,
            "agreement": _number(found.agreement),
            "coverage": _number(found.coverage),
            "coverage_interval": found.coverage_interval,
            "statement": found.words(),
        }
    )


class Pool(ReportPart):
    """The strata of a pool some of the set's examples were drawn from (`judgekit label --next`)."""

    pool: str
    sizes: dict[str, int] = Field(
        description="Replies of the pool in each stratum when it was drawn from."
    )
    labelled: dict[str, int] = Field(description="Examples of each stratum in the set calibrated.")
    metrics: dict[str, float | None] = Field(
        default_factory=dict,
        description="tpr and tnr of the pool's drawn "
        "examples alone, weighted within it: what the judge does on the "
        "pool (the gate checks them too).",
    )
    intervals: dict[str, tuple[float | None, float | None]] = Field(default_factory=dict)
    abstained: float = Field(
        0.0, description="The share of the pool the judge abstains on (weighted)."
    )
    without_bias: list[str] = Field(
        default_factory=list,
        description="The rates estimated without a ratio's bias (judgekit.stats.unbiased: the "
        "pool labelled in one round or in the rounds of its plan, its strata the judge's "
        "verdicts); the others are weighted ratios.",
    )


class Design(ReportPart):
    """How the set's examples were chosen, when some were drawn by design: the figures and their
    intervals are weighted accordingly (judgekit.stats.design), the confusion matrix counts
    examples."""

    pools: list[Pool]
    other: int = Field(description="Examples labelled some other way (weight 1 each).")
    weighted: tuple[float, float, float, float] = Field(
        description="tp, fp, tn, fn, each example counted by its "
        "weight: what a pass rate is corrected with."
    )

    @classmethod
    def of(
        cls,
        drawn: Sequence[Drawn | None],
        weighted: tuple[float, float, float, float],
        own: dict[str, PoolFigures],
    ) -> Design | None:
        if all(d is None for d in drawn):
            return None
        labelled = Counter((d.pool, d.stratum) for d in drawn if d is not None)
        pools: dict[str, Pool] = {}
        for d in drawn:
            if d is not None and d.pool not in pools:
                found, abstaining, unbiased = own[d.pool]
                pools[d.pool] = Pool(
                    pool=d.pool,
                    sizes=dict(d.sizes),
                    abstained=round(abstaining, 6),
                    labelled={k: labelled[(d.pool, k)] for k, _ in d.sizes},
                    metrics={k: _finite(found.metrics[k]) for k in ("tpr", "tnr")},
                    intervals={
                        k: (_finite(found.intervals[k][0]), _finite(found.intervals[k][1]))
                        for k in ("tpr", "tnr")
                    },
                    without_bias=list(unbiased),
                )
        tp, fp, tn, fn = weighted
        return cls(
            pools=list(pools.values()),
            other=sum(d is None for d in drawn),
            weighted=(round(tp, 6), round(fp, 6), round(tn, 6), round(fn, 6)),
        )

    def words(self) -> str:
        drawn = sum(sum(p.labelled.values()) for p in self.pools)
        strata = "; ".join(
            f"pool {p.pool}: "
            + ", ".join(f"{p.labelled.get(k, 0)} of {n} {k}" for k, n in sorted(p.sizes.items()))
            for p in self.pools
        )
        alone = "; ".join(
            f"pool {p.pool} alone: "
            + ", ".join(
                f"{k.upper()} {_word(p.metrics.get(k))} "
                f"({_word(p.intervals.get(k, (None, None))[0])}-"
                f"{_word(p.intervals.get(k, (None, None))[1])})"
                for k in ("tpr", "tnr")
            )
            + (f", abstaining on {p.abstained:.0%}" if p.abstained else "")
            + (
                f" ({' and '.join(k.upper() for k in p.without_bias)} without a ratio's bias: "
                "drawn in its planned rounds)"
                if p.without_bias
                else ""
            )
            for p in self.pools
        )
        return (
            f"{drawn} example(s) drawn by the judge's verdict ({strata}) "
            f"and {self.other} other(s): the "
            f"figures are weighted by how each was drawn. {alone}"
        )


def check_drawn(cal: CalibrationSet, whole: CalibrationSet | None = None) -> list[Drawn | None]:
    """How each example of the set was drawn, or an InputError naming the set when its selection
    records do not describe one design (a stratum none of whose replies is labelled, a skipped
    one); `whole` is the set `cal` is a split of, to say when the split is what breaks it."""
    drawn = [Drawn(*d) if (d := e.drawn()) else None for e in cal.examples]
    try:
        weights(drawn)
    except DesignError as error:
        if whole is not None and whole is not cal:
            check_drawn(whole)
            raise InputError.one(
                cal.path,
                "split",
                "the examples drawn from a pool are divided between the "
                f"splits, and this split alone is no design ({error}); give every example drawn "
                "from one pool the same split (or none)",
            ) from None
        raise InputError.one(cal.path, "selection", f"{error}") from None
    return drawn


def agreement(
    cal: CalibrationSet, verdicts: list[bool | None], seed: int, plain: bool = False
) -> tuple[Calibration, Design | None]:
    """The judge's agreement with the labels of a set: weighted by how the examples were drawn when
    some were drawn from a pool by design (`judgekit label --next`), counted plainly otherwise."""
    labels = [e.label for e in cal.examples]
    if plain or not any(e.selection for e in cal.examples):
        return calibration(labels, verdicts, seed=seed), None
    drawn = check_drawn(cal)
    try:  # each planned round's sizes, which the judge's verdicts on the labels decide
        verify_design(labels, verdicts, drawn)
    except DesignError as error:
        raise InputError.one(cal.path, "selection", f"{error}") from None
    cells = weighted_cells(labels, verdicts, weights(drawn))
    # seed 0 whatever --seed says: the gate draws kappa's interval the same way to check it
    return design_calibration(labels, verdicts, drawn), Design.of(
        drawn, cells, by_pool(labels, verdicts, drawn)
    )


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _word(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
