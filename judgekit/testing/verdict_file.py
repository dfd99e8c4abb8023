"""A verdict file that scripts the fake provider per example, for `python -m judgekit.testing
--verdicts FILE`: JSONL, CSV or YAML records, one per example,

    {"id": "p1", "verdict": "pass"}
    {"id": "f2", "verdict": "rate_limit"}        <- a fault kind: every request of f2 gets it
    {"match": "I've blocked", "verdict": "fail"}  <- by a piece of the reply, as FakeServer scripts
    {"id": "c1", "claims": [{"claim": "The card is blocked", "supported": true},
                            {"claim": "The fee is waived", "supported": "rate_limit"}]}
    {"match": "once approved", "verdict": "fail", "model": "judge-large"}  <- that model's only
    {"match": "usually take", "verdict": "pass", "sure": 0.6}  <- the answer token's probability

`verdict` is pass, fail or a fault kind (judgekit.testing.FAULTS); with pass or fail, `sure` is
the probability the judge gives its answer token when a request asks for log-probabilities
(judgekit.testing.Sure: selective judging), else near certain. `claims` scripts a claims check
instead (judgekit.testing.Claims): the claims the extraction step lists, in order, and each one's
support, true, false or a fault kind (in CSV, the list as JSON text); `[]` is a reply without
claims. A claim is verified as scripted against the source material of the example that lists it
(its `context`), or of any example for a `match` record. A prompt never holds an
example's id, so an `id` is found by its output text: its calibration set (in `--sets`; the one
of `criterion`, when the record names it) gives the example's output, and a request is that
example's when the prompt's judged reply (the last output block of a judgekit prompt) is
exactly that text; a prompt without an output block (a custom judge.prompt) is the example's
when it contains the text, the longest such text first. A `match` record needs no set: a request
is its when the judged reply contains `match`. Examples the file does not list get the default.
A record that names a `model` (as a request names it, without the provider's prefix) scripts that
model's answers alone, before the records that name none: several judges on one server, for
`judgekit compare`.

>>> answer = scripted(VerdictScript({"reply one": True, "reply": Fault("hang")}), default=False)
>>> answer("<output>\\nreply one\\n</output>"), answer("<output>\\nreply two\\n</output>")
(True, False)
>>> # no output block: contained, longest first
>>> answer("Judge this: reply one, then PASS or FAIL")
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PlainValidator, ValidationError, model_validator

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import find_set
from judgekit.inputs.files import RECORD_SUFFIXES, iter_records
from judgekit.inputs.sets import load_set
from judgekit.inputs.validation import ExampleId, Frozen, problems_of
from judgekit.judging.recorded import is_pair_record
from judgekit.testing.scripts import (
    FAULTS,
    Answer,
    Claims,
    Fault,
    Scripted,
    Sure,
    judged_reply,
    with_claims,
)

Verdict = Literal[("pass", "fail", *FAULTS)]  # type: ignore[valid-type]  # pass, fail or a fault kind


def _json_text(value: Any) -> Any:
    """A CSV cell holds the claims as JSON text."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise ValueError(
            'give the claims as a JSON list, e.g. [{"claim": "...", "supported": true}]'
        ) from None


def _support(value: Any) -> bool | str:
    if isinstance(value, bool) or (isinstance(value, str) and value in FAULTS):
        return value
    raise ValueError(f"give true, false or a fault kind ({', '.join(FAULTS)})")


class ScriptedClaim(Frozen):
    """One claim of a scripted claims check, and its support."""

    claim: Annotated[str, Field(min_length=1, pattern=r"^\S(.*\S)?$")]
    supported: Annotated[bool | str, PlainValidator(_support)]


class ScriptedVerdict(Frozen):
    """One record of a verdict file: which example (`id`, or `match`), and what it gets."""

    id: ExampleId | None = None
    criterion: str | None = None
    match: str | None = None
    model: Annotated[str, Field(min_length=1)] | None = None
    verdict: Verdict | None = None
    sure: Annotated[float, Field(gt=0, le=1)] | None = None
    claims: Annotated[tuple[ScriptedClaim, ...] | None, BeforeValidator(_json_text)] = None

    @model_validator(mode="after")
    def _names_an_example(self) -> ScriptedVerdict:
        if (self.id is None) == (self.match is None):
            raise ValueError(
                "give the example's id (found by its output in the calibration sets) or match (a "
                "piece of text its reply contains), one of the two"
            )
        if (self.verdict is None) == (self.claims is None):
            raise ValueError(
                "give a verdict (pass, fail or a fault kind) or claims (a claims check's claims "
                "and their support), one of the two"
            )
        if self.sure is not None and self.verdict not in ("pass", "fail"):
            raise ValueError(
                "sure is how sure a pass or fail verdict is; give it with verdict pass or fail"
            )
        return self

    def scripted(self) -> Scripted:
        if self.claims is not None:
            return Claims(
                {
                    c.claim: c.supported if isinstance(c.supported, bool) else Fault(c.supported)
                    for c in self.claims
                }
            )
        verdict = str(self.verdict)
        if verdict in ("pass", "fail"):
            return verdict == "pass" if self.sure is None else Sure(verdict == "pass", self.sure)
        return Fault(verdict)


@dataclass
class VerdictScript:
    """A verdict file read: the verdicts by output text (`id` records), by a piece of the reply
    (`match` records), and each scripted claim's support by (source material, claim)."""

    by_output: dict[str, Scripted] = field(default_factory=dict)
    by_match: dict[str, Scripted] = field(default_factory=dict)
    supports: dict[tuple[str | None, str], bool | Fault] = field(default_factory=dict)
    # the records that name a model: that model's own script, read before this one
    models: dict[str, VerdictScript] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.by_output) + len(self.by_match) + sum(map(len, self.models.values()))

    def of_model(self, model: str) -> VerdictScript:
        """The script one model answers by: its own records first, then the shared ones."""
        own = self.models.get(model, VerdictScript())
        return VerdictScript(
            {**self.by_output, **own.by_output},
            {**own.by_match, **{k: v for k, v in self.by_match.items() if k not in own.by_match}},
            {**self.supports, **own.supports},
        )


def _outputs(
    sets_dir: Path,
    criterion: str | None,
    cache: dict[str | None, dict[str, list[tuple[str, str]]]],
) -> dict[str, list[tuple[str, str]]]:
    """Each example id's outputs and source material in the calibration sets (of one criterion,
    or of all)."""
    if criterion not in cache:
        if criterion is not None:
            paths = [find_set(sets_dir, criterion)]
        elif sets_dir.is_dir():
            paths = sorted(p for p in sets_dir.iterdir() if p.suffix.lower() in RECORD_SUFFIXES)
        else:
            raise InputError.one(
                sets_dir,
                "",
                "is not a folder of calibration sets; pass --sets DIR, or give "
                "each record a match instead of an id",
            )
        found: dict[str, list[tuple[str, str]]] = {}
        for path in paths:
            for example in load_set(path, path.stem).examples:
                found.setdefault(example.id, []).append((example.output, example.context or ""))
        cache[criterion] = found
    return cache[criterion]


def load_script(path: Path, sets_dir: Path) -> VerdictScript:
    """A verdict file, read and checked. Every problem of the file is listed at once."""
    found = VerdictScript()
    problems: list[Problem] = []
    sets: dict[str | None, dict[str, list[tuple[str, str]]]] = {}
    if not path.is_file():
        raise InputError.one(
            path, "", "no such verdict file; pass --verdicts with a JSONL, CSV or YAML file"
        )
    pairs = 0
    for location, record in iter_records(path):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        if is_pair_record(record):  # a pairwise judge's: judgekit.testing.pairs reads those
            pairs += 1
            continue
        try:
            row = ScriptedVerdict.model_validate(record)
        except ValidationError as error:
            problems += problems_of(error, str(path), location)
            continue
        scripted = row.scripted()
        into = found if row.model is None else found.models.setdefault(row.model, VerdictScript())
        if row.match is not None:
            into.by_match[row.match] = scripted
            problems += _claims(into, None, scripted, str(path), location)
            continue
        outputs = _outputs(sets_dir, row.criterion, sets).get(row.id or "")
        if not outputs:
            where = (
                f"the calibration set of {row.criterion!r}"
                if row.criterion
                else f"the calibration sets in {sets_dir}"
            )
            problems.append(
                Problem(
                    str(path),
                    location,
                    f"no example {row.id!r} in {where}; check the id, pass "
                    "--sets DIR, or give a match (a piece of text its reply contains) instead",
                )
            )
            continue
        for output, context in outputs:
            into.by_output[output] = scripted
            problems += _claims(into, context, scripted, str(path), location)
    if problems:
        raise InputError(problems)
    if not found and not pairs:
        raise InputError.one(path, "", "holds no verdicts")
    return found


def _claims(
    found: VerdictScript, context: str | None, scripted: Scripted, path: str, location: str
) -> list[Problem]:
    """Put a record's scripted claims in `found`; a claim scripted twice against the same source
    material with different support is a problem."""
    if not isinstance(scripted, Claims):
        return []
    problems = []
    for claim, support in scripted.checks:
        before = found.supports.setdefault((context, claim), support)
        if before != support:
            problems.append(
                Problem(
                    path,
                    location,
                    f"claim {claim!r} is scripted {support} here and {before} in an earlier "
                    "record, against the same source material; give it one support",
                )
            )
    return problems


def scripted(script: VerdictScript, default: Scripted = True) -> Answer:
    """The answer function of a verdict file (the rules above)."""
    longest = sorted(script.by_output, key=len, reverse=True)

    def find(prompt: str) -> Scripted:
        reply = judged_reply(prompt)
        if reply in script.by_output:
            return script.by_output[reply]
        if reply == prompt:  # no <output> block: the example's output somewhere in the prompt
            text = next((text for text in longest if text and text in prompt), None)
            if text is not None:
                return script.by_output[text]
        return next(
            (verdict for needle, verdict in script.by_match.items() if needle in reply), default
        )

    return with_claims(find, script.supports, default)
