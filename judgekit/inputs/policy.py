"""The gate's policy: the thresholds a criterion's judge must clear, with per-criterion
overrides, read from `[tool.judgekit.gate]` in pyproject.toml or `gate:` in judgekit.yaml.

Plain dataclasses, checked by hand: the gate reads its policy on every CI run and must start fast.

>>> data = {"min_tpr": 0.9, "criteria": {"c": {"min_tnr": 0.7}}}
>>> Policy.from_mapping(data, "pyproject.toml").for_criterion("c")  # doctest: +NORMALIZE_WHITESPACE
Thresholds(min_tpr=0.9, min_tnr=0.7, min_kappa=None, min_examples=20, max_abstain_rate=0.1,
           max_flip_rate=0.2, max_age='30d', use_lower_bound=True, selective=None,
           label_sources=('human', 'adjudicated'), max_probe_flip=None, min_accuracy=0.75,
           min_consistency=0.8, max_position_bias=0.15)
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from judgekit.errors import InputError, Problem
from judgekit.inputs.files import read_text, read_yaml

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `1w`, `45s`: more than zero and at most 100 years."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(
            f"{text!r} is not a duration; write a number and a unit, like 30d, 12h or 90m"
        )
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not 0 < seconds <= 100 * 365 * 86400:
        raise ValueError(
            f"{text!r} is not a usable duration; give more than zero and at most 100 years"
        )
    return timedelta(seconds=seconds)


@dataclass(frozen=True)
class Selective:
    """Selective judging (judgekit.stats.selective): the judge gives a verdict only at or above a
    confidence threshold certified, on the labelled set, to agree with people on at least
    `min_agreement` of its verdicts with probability at least 1 - `delta`, and escalates the rest.
    The gate passes it when that threshold covers at least `min_coverage` of the examples (the
    lower bound of its 95% interval, with use_lower_bound); `min_covered` is the fewest covered
    examples a tested threshold covers (benchmarks/README.md: a larger start is less fragile);
    `procedure` is how the threshold is searched for: `both` (fixed sequence from the top and in
    a held-apart order, each at delta / 2) or `fixed-sequence` (from the top alone, at delta).
    """

    min_agreement: float = 0.9
    delta: float = 0.1
    min_coverage: float = 0.5
    min_covered: int = 1
    procedure: str = "both"

    @classmethod
    def parse(cls, data: Any, source: str, where: str) -> tuple[Selective | None, list[Problem]]:
        if data is None:
            return None, []
        if not isinstance(data, dict):
            return None, [
                Problem(
                    source, where, "must be a table like {min_agreement: 0.9, delta: 0.1}, or null"
                )
            ]
        rules = {
            "min_agreement": _open_share,
            "delta": _open_share,
            "min_coverage": _share(0),
            "min_covered": _count,
            "procedure": _procedure,
        }
        problems = [
            Problem(
                source,
                f"{where}.{key}",
                "unknown key; use min_agreement, delta, min_coverage, min_covered or procedure",
            )
            for key in data
            if key not in rules
        ]
        problems += [
            Problem(source, f"{where}.{key}", f"{message}, not {value!r}")
            for key, value in data.items()
            if key in rules and (message := rules[key](value))
        ]
        if problems:
            return None, problems
        default = cls()  # for the keys not given
        given = cls(
            min_agreement=float(data.get("min_agreement", default.min_agreement)),
            delta=float(data.get("delta", default.delta)),
            min_coverage=float(data.get("min_coverage", default.min_coverage)),
            min_covered=data.get("min_covered", default.min_covered),
            procedure=data.get("procedure", default.procedure),
        )
        return given, []


# judgekit.stats.selective.PROCEDURES (a sibling layer: each names them; a test holds them equal)
PROCEDURES = ("both", "fixed-sequence")


def _procedure(value: Any) -> str | None:
    return None if value in PROCEDURES else f"must be one of {', '.join(PROCEDURES)}"


def _open_share(value: Any) -> str | None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return None if number and 0 < value < 1 else "must be a number between 0 and 1 (both excluded)"


@dataclass(frozen=True)
class Thresholds:
    """What a criterion's judge must show. Every field of an override may be left out.

    min_tpr / min_tnr: shares of known-good replies the judge must pass / known-bad it must fail;
    min_kappa: optional; min_examples: labelled examples needed in each class; max_abstain_rate;
    max_flip_rate: when trials ran, the share of examples whose trials disagreed (null: any);
    max_age: oldest evidence accepted, like 30d or 12h (null: any age); use_lower_bound: apply the
    thresholds to the 95% interval's lower bound; selective: a `Selective` table, which replaces
    the TPR / TNR / kappa / abstention thresholds by a certified agreement and a coverage;
    label_sources: whose labels count as ground truth (human, adjudicated, feedback, model), by
    default human and adjudicated ones; a model's labels never count for a judge of its family;
    max_probe_flip: the largest share of verdicts a robustness probe may buy (judgekit.judging.
    probes), on its 95% interval's upper bound; null: probes are not gated. Set, every LLM and
    claims criterion is probed by `calibrate` (the default probes and any its `probes:` list adds).

    Pairwise criteria (`kind: pairwise`, judgekit.inputs.pairwise) are gated on min_accuracy (of
    the pairs labelled a or b with a verdict, on the Wilson interval's lower bound),
    min_consistency (the share of pairs answered in both orders whose two orders agree, on the
    exact interval's lower bound) and max_position_bias (the share of those pairs one position
    won in both orders, for each position, on the exact interval's upper bound), besides
    min_examples (pairs labelled a or b), max_abstain_rate (pairs without a verdict: no answer,
    or orders that disagree counted as an abstention), max_probe_flip and max_age.
    """

    min_tpr: float = 0.8
    min_tnr: float = 0.8
    min_kappa: float | None = None
    min_examples: int = 20
    max_abstain_rate: float = 0.1
    max_flip_rate: float | None = 0.2
    max_age: str | None = "30d"
    use_lower_bound: bool = True
    selective: Selective | None = None
    label_sources: tuple[str, ...] = ("human", "adjudicated")
    max_probe_flip: float | None = None
    min_accuracy: float = 0.75
    min_consistency: float = 0.8
    max_position_bias: float = 0.15

    @classmethod
    def parse(
        cls, data: dict[str, Any], source: str, where: str, base: Thresholds | None = None
    ) -> tuple[Thresholds | None, list[Problem]]:
        """Thresholds from a table (keys left out keep `base`'s values), or every problem of it."""
        known = {f.name for f in fields(cls)}
        problems = [
            Problem(source, f"{where}.{key}", "unknown key; remove it or check its spelling")
            for key in data
            if key not in known
        ]
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                continue
            if key == "selective":
                values[key], found = Selective.parse(value, source, f"{where}.{key}")
                problems += found
                continue
            message = _RULES[key](value)
            if message:
                problems.append(Problem(source, f"{where}.{key}", f"{message}, not {value!r}"))
            elif key == "label_sources":
                values[key] = tuple(dict.fromkeys(value))
            else:
                values[key] = float(value) if key in _FLOATS and value is not None else value
        if problems:
            return None, problems
        return replace(base or cls(), **values), []


def _share(low: float) -> Any:
    def rule(value: Any) -> str | None:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if number and low <= value <= 1 else f"must be a number from {low:g} to 1"

    return rule


def _or_null(rule: Any) -> Any:
    return lambda value: None if value is None else rule(value)


def _count(value: Any) -> str | None:
    whole = isinstance(value, int) and not isinstance(value, bool)
    return None if whole and value >= 1 else "must be a whole number of at least 1"


def _duration_rule(value: Any) -> str | None:
    if value is None:
        return None
    try:
        parse_duration(value) if isinstance(value, str) else parse_duration("")
    except ValueError as error:
        return (
            str(error).split(";")[0]
            + "; write a number and a unit, like 30d, 12h or 90m (null for any age)"
        )
    return None


LABEL_SOURCES = ("human", "adjudicated", "feedback", "model")


def _label_sources(value: Any) -> str | None:
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, str) and v in LABEL_SOURCES for v in value)
    ):
        return None
    return f"must be a list of some of {', '.join(LABEL_SOURCES)}"


_FLOATS = {
    "min_tpr",
    "min_tnr",
    "min_kappa",
    "max_abstain_rate",
    "max_flip_rate",
    "max_probe_flip",
    "min_accuracy",
    "min_consistency",
    "max_position_bias",
}
_RULES = {
    "min_tpr": _share(0),
    "min_tnr": _share(0),
    "min_kappa": _or_null(_share(-1)),
    "min_examples": _count,
    "max_abstain_rate": _share(0),
    "max_flip_rate": _or_null(_share(0)),
    "max_probe_flip": _or_null(_open_share),
    "min_accuracy": _share(0),
    "min_consistency": _share(0),
    "max_position_bias": _share(0),
    "max_age": _duration_rule,
    "use_lower_bound": lambda value: None if isinstance(value, bool) else "must be true or false",
    "label_sources": _label_sources,
}


@dataclass(frozen=True)
class Policy:
    """Gate thresholds: defaults, and each overridden criterion's full thresholds."""

    defaults: Thresholds = Thresholds()
    criteria: dict[str, Thresholds] = field(default_factory=dict)
    source: str = ""
    agent_model: str | None = None  # the agent's model: a judge of the same model may not grade it
    # FAIL evidence that is not signed under an evidence key (JUDGEKIT_EVIDENCE_KEY), also when the
    # gate runs with no key configured (a forked pull request's CI has no secrets)
    require_signed_evidence: bool = False

    def for_criterion(self, criterion_id: str) -> Thresholds:
        return self.criteria.get(criterion_id, self.defaults)

    @classmethod
    def from_mapping(cls, data: Any, source: str) -> Policy:
        """Read `{min_tpr: ..., criteria: {id: {...}}}`: defaults at the top, overrides under
        criteria, each override the defaults with its keys replaced; every problem of every table
        is listed at once."""
        if data is None:
            return cls(source=source)
        if not isinstance(data, dict):
            raise InputError.one(source, "gate", "must be a table of thresholds")
        overrides = data.get("criteria") or {}
        if not isinstance(overrides, dict):
            raise InputError.one(source, "gate.criteria", "must be a table of criterion ids")
        agent_model = data.get("agent_model")
        signed = data.get("require_signed_evidence", False)
        top = ("criteria", "agent_model", "require_signed_evidence")
        defaults, problems = Thresholds.parse(
            {k: v for k, v in data.items() if k not in top}, source, "gate"
        )
        if not isinstance(signed, bool):
            problems.append(
                Problem(source, "gate.require_signed_evidence", "must be true or false")
            )
        if agent_model is not None and (
            not isinstance(agent_model, str) or not agent_model.strip()
        ):
            problems.append(
                Problem(source, "gate.agent_model", "must be a model name, like openai/gpt-4o")
            )
        criteria = {}
        for criterion_id, override in overrides.items():
            where = f"gate.criteria.{criterion_id}"
            if not isinstance(override, dict):
                problems.append(Problem(source, where, "must be a table of thresholds"))
                continue
            thresholds, found = Thresholds.parse(override, source, where, defaults)
            problems += found
            if thresholds is not None:
                criteria[str(criterion_id)] = thresholds
        if problems:
            raise InputError(problems)
        return cls(
            defaults=defaults or Thresholds(),
            criteria=criteria,
            source=source,
            agent_model=agent_model.strip() if isinstance(agent_model, str) else None,
            require_signed_evidence=signed is True,
        )

    def check_ids(self, known: set[str]) -> None:
        """An override for a criterion that does not exist is a typo, not a no-op."""
        unknown = sorted(set(self.criteria) - known)
        if unknown:
            raise InputError(
                [
                    Problem(
                        self.source or "gate policy",
                        f"gate.criteria.{cid}",
                        f"no criterion {cid!r} (known: {', '.join(sorted(known))})",
                    )
                    for cid in unknown
                ]
            )

    @classmethod
    def load(cls, path: Path | None = None, root: Path = Path(".")) -> Policy:
        """From `path` (judgekit.yaml or pyproject.toml), else the first of those in `root`."""
        data, source = read_section("gate", path, root)
        return cls.from_mapping(data, source) if source else cls()


SECTIONS = ("gate", "drift", "monitor", "history_url")


def read_section(section: str, path: Path | None = None, root: Path = Path(".")) -> tuple[Any, str]:
    """The `section` table of judgekit's settings and the file it came from ("" when none has it):
    `section:` in judgekit.yaml, or `[tool.judgekit.<section>]` in pyproject.toml. An explicit
    `path` must exist; otherwise the first of judgekit.yaml and pyproject.toml in `root` that has
    the section (so `gate:` in judgekit.yaml does not hide `[tool.judgekit.monitor]`)."""
    if path is not None and not path.is_file():
        raise InputError.one(path, "", "no such configuration file")
    candidates = [path] if path else [root / "judgekit.yaml", root / "pyproject.toml"]
    for candidate in candidates:
        if candidate is None or not candidate.is_file():
            continue
        if candidate.suffix == ".toml":
            try:
                data = tomllib.loads(read_text(candidate))
            except tomllib.TOMLDecodeError as error:
                raise InputError.one(candidate, "", f"is not valid TOML: {error}") from None
            tool = data.get("tool", {}).get("judgekit") or {}
            if section in tool or path is not None:
                return tool.get(section), str(candidate)
            continue
        data = read_yaml(candidate) or {}
        if not isinstance(data, dict):
            raise InputError.one(
                candidate, "", f"must be a YAML mapping with keys among {', '.join(SECTIONS)}"
            )
        unknown = set(data) - set(SECTIONS)
        if unknown:
            raise InputError.one(
                candidate,
                ", ".join(sorted(unknown)),
                f"unknown key; judgekit.yaml holds {', '.join(SECTIONS)}",
            )
        if section in data or path is not None:
            return data.get(section), str(candidate)
    return None, ""
