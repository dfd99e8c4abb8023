"""The gate's policy: the thresholds a criterion's judge must clear, with per-criterion
overrides, read from `[tool.judgekit.gate]` in pyproject.toml or `gate:` in judgekit.yaml.

>>> Policy.from_mapping({"min_tpr": 0.9, "criteria": {"c": {"min_tnr": 0.7}}}, "pyproject.toml").for_criterion("c")
Thresholds(min_tpr=0.9, min_tnr=0.7, min_kappa=None, min_examples=20, max_abstain_rate=0.1, max_flip_rate=0.2, max_age='30d', use_lower_bound=True)
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from judgekit.criteria import Frozen
from judgekit.errors import InputError, Problem
from judgekit.files import problems_of, read_text, read_yaml

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `1w`, `45s`: more than zero and at most 100 years."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration; write a number and a unit, like 30d, 12h or 90m")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not 0 < seconds <= 100 * 365 * 86400:
        raise ValueError(f"{text!r} is not a usable duration; give more than zero and at most 100 years")
    return timedelta(seconds=seconds)


class Thresholds(Frozen):
    """What a criterion's judge must show. Every field of an override may be left out."""

    min_tpr: float = Field(0.8, ge=0, le=1, description="Share of known-good replies the judge must pass.")
    min_tnr: float = Field(0.8, ge=0, le=1, description="Share of known-bad replies the judge must fail.")
    min_kappa: float | None = Field(None, ge=-1, le=1)
    min_examples: int = Field(20, ge=1, description="Labelled examples needed in each class (good and bad).")
    max_abstain_rate: float = Field(0.1, ge=0, le=1)
    max_flip_rate: float | None = Field(0.2, ge=0, le=1, description="When trials ran: share of examples "
                                                                      "whose trials disagreed.")
    max_age: str | None = Field("30d", description="Oldest report accepted, like 30d or 12h; null for any age.")
    use_lower_bound: bool = Field(True, description="Apply thresholds to the interval's lower bound.")

    @field_validator("max_age")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value


class Policy(Frozen):
    """Gate thresholds: defaults, and each overridden criterion's full thresholds."""

    defaults: Thresholds = Thresholds()
    criteria: dict[str, Thresholds] = Field(default_factory=dict)
    source: str = ""

    def for_criterion(self, criterion_id: str) -> Thresholds:
        return self.criteria.get(criterion_id, self.defaults)

    @classmethod
    def from_mapping(cls, data: Any, source: str) -> "Policy":
        """Read `{min_tpr: ..., criteria: {id: {...}}}`: defaults at the top, overrides under
        criteria, each override validated as the defaults with its keys replaced; every problem
        of every table is listed at once."""
        if data is None:
            return cls(source=source)
        if not isinstance(data, dict):
            raise InputError.one(source, "gate", "must be a table of thresholds")
        overrides = data.get("criteria") or {}
        if not isinstance(overrides, dict):
            raise InputError.one(source, "gate.criteria", "must be a table of criterion ids")
        raw_defaults = {k: v for k, v in data.items() if k != "criteria"}
        problems = []
        defaults = Thresholds()
        try:
            defaults = Thresholds.model_validate(raw_defaults)
        except ValidationError as error:
            problems += problems_of(error, source, "gate")
        criteria = {}
        for criterion_id, override in overrides.items():
            where = f"gate.criteria.{criterion_id}"
            if not isinstance(override, dict):
                problems.append(Problem(source, where, "must be a table of thresholds"))
                continue
            try:
                criteria[str(criterion_id)] = Thresholds.model_validate({**defaults.model_dump(), **override})
            except ValidationError as error:
                problems += problems_of(error, source, where)
        if problems:
            raise InputError(problems)
        return cls(defaults=defaults, criteria=criteria, source=source)

    def check_ids(self, known: set[str]) -> None:
        """An override for a criterion that does not exist is a typo, not a no-op."""
        unknown = sorted(set(self.criteria) - known)
        if unknown:
            raise InputError([Problem(self.source or "gate policy", f"gate.criteria.{cid}",
                                      f"no criterion {cid!r} (known: {', '.join(sorted(known))})") for cid in unknown])

    @classmethod
    def load(cls, path: Path | None = None, root: Path = Path(".")) -> "Policy":
        """From `path` (judgekit.yaml or pyproject.toml), else the first of those found in `root`."""
        data, source = read_section("gate", path, root)
        return cls.from_mapping(data, source) if source else cls()


SECTIONS = ("gate", "drift", "monitor")


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
            import tomllib

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
            raise InputError.one(candidate, "", f"must be a YAML mapping with keys among {', '.join(SECTIONS)}")
        unknown = set(data) - set(SECTIONS)
        if unknown:
            raise InputError.one(candidate, ", ".join(sorted(unknown)),
                                 f"unknown key; judgekit.yaml holds {', '.join(SECTIONS)}")
        if section in data or path is not None:
            return data.get(section), str(candidate)
    return None, ""


def load_settings(model: type[Frozen], section: str, path: Path | None = None, root: Path = Path(".")) -> Any:
    """A flat settings table (drift, monitor) validated by its model; defaults when absent."""
    data, source = read_section(section, path, root)
    if data is None:
        return model()
    if not isinstance(data, dict):
        raise InputError.one(source, section, "must be a table of settings")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(problems_of(error, source, section)) from None


class DriftPolicy(Frozen):
    """When a change between two runs of a criterion counts as drift (`drift:` in judgekit.yaml)."""

    alpha: float = Field(0.05, gt=0, lt=1, description="False-alarm rate of the drift decision.")
    max_run_flip_rate: float = Field(0.02, ge=0, lt=1, description="Share of examples an unchanged judge may "
                                     "flip between two runs (its own non-determinism).")


class MonitorPolicy(Frozen):
    """When a production pass rate has dropped (`monitor:` in judgekit.yaml)."""

    window: str = Field("1d", description="Width of a window, like 1d, 6h or 1w.")
    baseline_windows: int = Field(7, ge=1, description="Earlier windows pooled as the baseline of each window.")
    max_drop: float = Field(0.05, ge=0, lt=1, description="Drop of the pass rate below the baseline tolerated.")
    alpha: float = Field(0.01, gt=0, lt=1, description="False-alarm rate per window and criterion.")
    min_samples: int = Field(30, ge=1, description="Windows with fewer verdicts are shown but never alert.")

    @field_validator("window")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value
