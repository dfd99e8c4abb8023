"""What one example is: the digest of exactly what its criterion's judge is shown.

Two records that show the judge the same text are one piece of evidence, whatever their ids and
whatever fields the judge never reads: counted once by the metrics, once by the test split's
budget, and compared with few-shot examples by the same digest.

>>> from judgekit.inputs.criteria import LLMCriterion
>>> c = LLMCriterion(id="c", question="Is it polite?", inputs=["output"])
>>> shown(c)
('output',)
>>> identity(c, {"input": "a", "output": "Thank  you."}) == identity(c, {"output": "Thank you."})
True
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any, Protocol

from judgekit.errors import Problem
from judgekit.inputs.criteria import (
    ClaimsCriterion,
    Criterion,
    ExampleField,
    LLMCriterion,
    RegexCriterion,
)
from judgekit.inputs.text import normal_text

# The order the prompt shows them in (judging/prompts.py).
_ORDER: tuple[ExampleField, ...] = ("input", "context", "output")


_SLOT = re.compile(r"\{\{\s*(input|output|context)\s*\}\}")


def shown(criterion: Criterion) -> tuple[ExampleField, ...]:
    """The fields of an example the criterion's judge reads: an llm criterion's `inputs` and the
    fields its own prompt or system message names (`{{input}}`), a claims criterion's reply and
    source, a regex criterion's one field."""
    if isinstance(criterion, RegexCriterion):
        return (criterion.field,)
    if isinstance(criterion, ClaimsCriterion):
        return ("context", "output")
    named = set(criterion.inputs)
    for text in (criterion.judge.prompt, criterion.judge.system):
        named |= set(_SLOT.findall(text or ""))
    return tuple(f for f in _ORDER if f in named)


def shot_shown(criterion: LLMCriterion) -> tuple[ExampleField, ...]:
    """The fields a few-shot example shows the judge: the criterion's `inputs` alone (the prompt's
    own slots show the example being judged, not the shots; judging/prompts.py)."""
    return tuple(f for f in _ORDER if f in criterion.inputs)


def shot_identifier(criterion: LLMCriterion) -> Callable[[Mapping[str, Any]], str]:
    """The digest of what a few-shot example shows (`shot_shown`), for a shot and for a set example
    alike: a set example leaks when the judge was shown its text in those fields with the answer,
    whatever else the judge reads of it."""
    return _digester(False, shot_shown(criterion))


def _digest(exact: bool, fields: Mapping[str, Any], names: Iterable[str]) -> str:
    """The digest of the named fields that hold text (an empty field is no field): exact for
    code, which reads bytes; normalised for a model (judgekit.inputs.text)."""
    return _digester(exact, tuple(names))(fields)


def _digester(exact: bool, names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], str]:
    """`_digest` for one reader and one tuple of names, made once for a whole set: the canonical
    JSON of `{"read by": ..., "shown": {name: text}}` (judgekit.fingerprint), written directly.
    Equal to `canonical_hash(...)[:16]` of that mapping (tests/test_identity.py)."""
    head = '{"read by":' + ('"code"' if exact else '"model"') + ',"shown":{'
    keyed = [(name, encode_basestring(name) + ":") for name in sorted(set(names))]
    sha256 = hashlib.sha256

    def digest(fields: Mapping[str, Any]) -> str:
        parts = []
        for name, key in keyed:
            value = fields.get(name)
            text = "" if value is None else str(value)
            if text:
                parts.append(key + encode_basestring(text if exact else normal_text(text)))
        return sha256((head + ",".join(parts) + "}}").encode("utf-8")).hexdigest()[:16]

    return digest


def identifier(criterion: Criterion) -> Callable[[Mapping[str, Any]], str]:
    """`identity` for one criterion, its fields read once: for the examples of a whole set."""
    return _digester(isinstance(criterion, RegexCriterion), shown(criterion))


def identity(criterion: Criterion, fields: Mapping[str, Any]) -> str:
    """The example's identity for this criterion (16 hex digits)."""
    return identifier(criterion)(fields)


def any_identity(fields: Mapping[str, Any]) -> set[str]:
    """The example's identity under every criterion a model reads it by (its output, with or
    without its input and context): the names looks may have recorded it under, so that editing
    a criterion's `inputs` does not make a looked-at example fresh."""
    return {
        _digest(False, fields, ("output", *extra))
        for extra in ((), ("input",), ("context",), ("input", "context"))
    }


@dataclass(frozen=True)
class Distinct:
    """A set's examples by identity: the first id of each (`kept`, in set order), the later ids
    that are copies of it (`copies`: kept id -> copies), and the identities that carry opposite
    labels (`conflicts`: the later id and the kept one, with a problem each naming both).
    `repeated`: the kept ids drawn from a pool that show the judge what an earlier kept example
    shows (units of the pool's design, weighted as such, but no new evidence: min_examples counts
    each reply once)."""

    kept: tuple[str, ...]
    copies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()
    conflicts: tuple[tuple[str, str], ...] = ()
    repeated: tuple[str, ...] = ()

    @property
    def copied(self) -> int:
        return sum(len(c) for c in self.copies.values())


class ExampleLike(Protocol):
    """What `distinct` reads of an example (judgekit.inputs.sets.Example is one)."""

    @property
    def id(self) -> str: ...

    @property
    def label(self) -> bool: ...

    @property
    def split(self) -> str | None: ...

    def fields(self) -> dict[str, Any]: ...


def _drawn(example: ExampleLike) -> bool:
    return getattr(example, "selection", None) is not None


def distinct(criterion: Criterion, examples: Iterable[ExampleLike], where: str) -> Distinct:
    """The distinct examples of `examples` for the criterion; `where` names the file in a
    problem. An example drawn from a pool (`judgekit label --next`) is a unit of the pool's
    design, whose estimates weight each drawn reply as the many times it comes in production:
    it is kept, copy or not, and named `repeated` when it is one (opposite labels on one text
    are still a problem)."""
    first: dict[str, ExampleLike] = {}
    copies: dict[str, list[str]] = {}
    of: dict[str, str] = {}
    problems: list[Problem] = []
    conflicts: list[tuple[str, str]] = []
    drawn: list[ExampleLike] = []
    identify = identifier(criterion)
    for e in examples:
        key = identify(e.fields())
        of[e.id] = key
        kept = first.get(key)
        if kept is None:
            first[key] = e
            continue
        if kept.label != e.label:
            problems.append(
                Problem(
                    where,
                    f"id {e.id}",
                    f"shows criterion {criterion.id!r}'s judge the same "
                    f"{' and '.join(shown(criterion))} as id {kept.id} but is labelled "
                    f"{'pass' if e.label else 'fail'} where id {kept.id} is labelled "
                    f"{'pass' if kept.label else 'fail'}; one of the labels is wrong: fix it, "
                    "or remove one of the two",
                )
            )
            conflicts.append((e.id, kept.id))
            continue
        if _drawn(e):  # a unit of a pool's design, kept
            drawn.append(e)
            continue
        copies.setdefault(kept.id, []).append(e.id)
    kept_ids = {e.id for e in first.values()} | {e.id for e in drawn}
    return Distinct(
        tuple(i for i in of if i in kept_ids),
        {k: tuple(v) for k, v in copies.items()},
        tuple(problems),
        tuple(conflicts),
        tuple(e.id for e in drawn),
    )


def order_keys(criterion: Criterion, examples: Iterable[ExampleLike]) -> list[str]:
    """Each example's key in early stopping's sequential order (judgekit.stats.sequential.
    content_order): its identity for the criterion (what its judge is shown) and its label; the
    runner orders by it, and the gate derives the order again by it."""
    identify = identifier(criterion)
    return [f"{identify(e.fields())}:{int(e.label)}" for e in examples]
