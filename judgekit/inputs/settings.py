"""The settings of watching a judge over time: when a change between two runs is drift (`drift:`)
and when a production pass rate has dropped (`monitor:`), from judgekit.yaml or pyproject.toml.

>>> DriftPolicy().alpha, MonitorPolicy().window
(0.05, '1d')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from judgekit.errors import InputError
from judgekit.inputs.policy import parse_duration, read_section
from judgekit.inputs.validation import Frozen, problems_of


def load_settings(
    model: type[Frozen], section: str, path: Path | None = None, root: Path = Path(".")
) -> Any:
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
    max_run_flip_rate: float = Field(
        0.02,
        ge=0,
        lt=1,
        description="Share of examples an unchanged judge may "
        "flip between two runs (its own non-determinism).",
    )


class MonitorPolicy(Frozen):
    """When a production pass rate has dropped (`monitor:` in judgekit.yaml)."""

    window: str = Field("1d", description="Width of a window, like 1d, 6h or 1w.")
    baseline_windows: int = Field(
        7, ge=1, description="Earlier windows pooled as the baseline of each window."
    )
    max_drop: float = Field(
        0.05, ge=0, lt=1, description="Drop of the pass rate below the baseline tolerated."
    )
    alpha: float = Field(0.01, gt=0, lt=1, description="False-alarm rate per window and criterion.")
    min_samples: int = Field(
        30, ge=1, description="Windows with fewer verdicts are shown but never alert."
    )

    @field_validator("window")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value
