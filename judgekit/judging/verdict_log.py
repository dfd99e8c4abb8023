"""A criterion's verdicts as a report holds them: every trial of every example, read as
`RecordedVerdict`s (what verdicts.jsonl holds), made one at a time from the engine's verdicts.

A report of a million examples would otherwise hold a million `RecordedVerdict`s (about 540 bytes
each) beside the engine's verdicts they are made from; the log keeps the latter only, and each
pass over it (writing verdicts.jsonl, the history, a data frame) makes the records as it goes.

>>> from datetime import datetime, timezone
>>> from judgekit.judging.verdicts import Verdict
>>> stages = [[[Verdict("e1", True, "ok")], [Verdict("e2", None, abstention="refusal")]]]
>>> log = VerdictLog.of("c", stages, judge=None, started=datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> len(log), [(v.id, v.passed, v.reason) for v in log]
(2, [('e1', True, 'ok'), ('e2', None, '(refusal) ')])
>>> log == VerdictLog(list(log))
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from judgekit.judging.recorded import RecordedClaim, RecordedVerdict
from judgekit.judging.verdicts import Verdict


def recorded_claims(verdict: Verdict) -> list[RecordedClaim] | None:
    """A claims check's claims as a verdict file records them (None when it checked none)."""
    if verdict.claims is None:
        return None
    return [
        RecordedClaim(claim=c.claim, supported=c.supported, evidence=c.evidence)
        for c in verdict.claims
    ]


class VerdictLog(Sequence[RecordedVerdict]):
    """Verdicts given as `RecordedVerdict`s, or (`of`) the engine's, per stage (0: the criterion's
    judge, 1: the one it escalates to), example and trial, made into records as they are read."""

    __slots__ = ("_given", "_stages", "_probes", "_criterion", "_judge", "_started", "_length")

    def __init__(self, verdicts: Iterable[RecordedVerdict] = ()):
        self._given: list[RecordedVerdict] | None = list(verdicts)
        self._stages: Sequence[Sequence[Sequence[Verdict]]] = ()
        self._probes: Mapping[str, Sequence[Sequence[Verdict]]] = {}
        self._criterion = ""
        self._judge: str | None = None
        self._started = datetime.now(UTC)
        self._length = len(self._given)

    @classmethod
    def of(
        cls,
        criterion_id: str,
        stages: Sequence[Sequence[Sequence[Verdict]]],
        judge: str | None,
        started: datetime,
        probes: Mapping[str, Sequence[Sequence[Verdict]]] | None = None,
    ) -> VerdictLog:
        """The engine's verdicts of one criterion; `judge` marks them as its own (None: another
        tool's); a verdict with no time of its own was obtained at `started`. `probes`: per probe,
        the verdicts on its rewrites, each by the id of the example rewritten (after the stages)."""
        log = cls()
        log._given, log._stages, log._probes = None, stages, probes or {}
        log._criterion, log._judge, log._started = criterion_id, judge, started
        log._length = sum(
            len(trials) for judged in (*stages, *log._probes.values()) for trials in judged
        )
        return log

    def __iter__(self) -> Iterator[RecordedVerdict]:
        if self._given is not None:
            yield from self._given
            return
        for criterion, rid, trial, passed, at, confidence, stage, v, probe in self._each():
            # Built from judgekit's own verdicts, already checked: no need to validate them again.
            yield RecordedVerdict.trusted(
                criterion=criterion,
                id=rid,
                trial=trial,
                passed=passed,
                raw=v.raw,
                stage=stage,
                reason=v.reason if v.abstention is None else f"({v.abstention}) {v.reason or ''}",
                claims=recorded_claims(v),
                at=at,
                judge=self._judge,
                confidence=confidence,
                probe=probe,
            )

    def lines(self) -> Iterator[str]:
        """Each verdict as its verdicts.jsonl line: `RecordedVerdict.line()` of each, written
        without making the records."""
        if self._given is not None:
            for r in self._given:
                yield r.line()
            return
        dumps, judge = _LINE.encode, self._judge
        # each time object written once (`_each` shares one per time; recorded verdicts share one):
        # by identity, the object held, so that equal times in two zones keep their own text
        written: dict[int, tuple[datetime, str]] = {}
        for criterion, rid, trial, passed, at, confidence, stage, v, probe in self._each():
            known = written.get(id(at))
            if known is None:
                known = written[id(at)] = (at, _iso(at))
            when = known[1]
            data = _record(criterion, rid, trial, passed, when, confidence, stage, v, judge, probe)
            yield dumps(data) + "\n"

    def plain(
        self,
    ) -> Iterator[
        tuple[
            str | None,
            str,
            int,
            bool | None,
            datetime | None,
            float | None,
            int,
            str | None,
            str | None,
        ]
    ]:
        """`(criterion, id, trial, passed, at, confidence, stage, judge, probe)` of each verdict,
        in the order of iteration, without making the records (what the gate decides on)."""
        if self._given is not None:
            for r in self._given:
                yield (
                    r.criterion,
                    str(r.id),
                    r.trial,
                    r.passed,
                    r.at,
                    r.confidence,
                    r.stage,
                    r.judge,
                    r.probe,
                )
            return
        judge = self._judge
        for criterion, rid, trial, passed, at, confidence, stage, _, probe in self._each():
            yield criterion, rid, trial, passed, at, confidence, stage, judge, probe

    def _each(
        self,
    ) -> Iterator[
        tuple[str, str, int, bool | None, datetime, float | None, int, Verdict, str | None]
    ]:
        # One time object per distinct time (recorded verdicts share one).
        seen: dict[float, datetime] = {}
        runs: list[tuple[int, Sequence[Sequence[Verdict]], str | None]] = [
            (stage, judged, None) for stage, judged in enumerate(self._stages)
        ]
        runs += [(0, judged, probe) for probe, judged in self._probes.items()]
        for stage, judged, probe in runs:
            for trials in judged:
                for v in trials:
                    if v.obtained_at is None:
                        at = self._started
                    elif (known := seen.get(v.obtained_at)) is not None:
                        at = known
                    else:
                        at = seen[v.obtained_at] = datetime.fromtimestamp(v.obtained_at, UTC)
                    yield (
                        self._criterion,
                        v.example_id,
                        v.trial,
                        v.passed,
                        at,
                        v.confidence,
                        stage,
                        v,
                        probe,
                    )

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:
        """A verdict or a slice, by position (made from the engine's verdicts, it reads all)."""
        return (self._given if self._given is not None else list(self))[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (VerdictLog, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, as the list it equals is

    def __repr__(self) -> str:
        return f"VerdictLog({self._length} verdicts)"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A log as it is; a list is validated as RecordedVerdicts and held as given."""
        from pydantic_core import core_schema

        listed = core_schema.no_info_after_validator_function(
            cls, handler.generate_schema(list[RecordedVerdict])
        )
        return core_schema.json_or_python_schema(
            json_schema=listed,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(cls), listed]),
        )


def _record(  # noqa: PLR0913  one verdict's fields, as `VerdictLog._each` gives them
    criterion: str | None,
    rid: str,
    trial: int,
    passed: bool | None,
    at: str,
    confidence: float | None,
    stage: int,
    v: Verdict,
    judge: str | None,
    probe: str | None = None,
) -> dict[str, Any]:
    """What `RecordedVerdict.line()` writes of a verdict: its fields but the defaults, in the
    model's order, `passed` always (last when it is null, as pydantic leaves it out)."""
    data: dict[str, Any] = {} if criterion is None else {"criterion": criterion}
    data["id"] = rid
    if trial:
        data["trial"] = trial
    if passed is not None:
        data["passed"] = passed
    reason = v.reason if v.abstention is None else f"({v.abstention}) {v.reason or ''}"
    if reason is not None:
        data["reason"] = reason
    if v.raw is not None:
        data["raw"] = v.raw
    if v.claims is not None:
        data["claims"] = [
            {"claim": c.claim, "supported": c.supported}
            | ({"evidence": c.evidence} if c.evidence is not None else {})
            for c in v.claims
        ]
    data["at"] = at  # as `_iso` writes it
    if judge is not None:
        data["judge"] = judge
    if confidence is not None:
        data["confidence"] = confidence
    if stage:
        data["stage"] = stage
    if probe is not None:
        data["probe"] = probe
    if passed is None:
        data["passed"] = None
    return data


# How `RecordedVerdict.line()` writes a line: UTF-8 as is, no spaces.
_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _iso(at: datetime) -> str:
    """A time as pydantic writes it in JSON (UTC as `Z`)."""
    text = at.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
