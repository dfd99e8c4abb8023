"""judgekit: calibrate LLM judges against human labels, and gate eval suites on judges that can be trusted.

Importing judgekit does nothing: no clients, no key reads, no disk, no network. The names below
are loaded on first use.

>>> import judgekit
>>> judgekit.Options().concurrency
16
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "calibrate": "judgekit.pipeline",
    "Options": "judgekit.pipeline",
    "load_inputs": "judgekit.pipeline",
    "Report": "judgekit.report",
    "Verdict": "judgekit.verdicts",
    "Example": "judgekit.sets",
    "LLMCriterion": "judgekit.criteria",
    "RegexCriterion": "judgekit.criteria",
    "JudgekitError": "judgekit.errors",
    "InputError": "judgekit.errors",
    "JudgeError": "judgekit.errors",
    "ProviderUnreachable": "judgekit.errors",
    "ProviderAuthError": "judgekit.errors",
    "ProviderRejects": "judgekit.errors",
    "ModelUnavailable": "judgekit.errors",
    "Gate": "judgekit.gate",
    "GateResult": "judgekit.gate",
    "Policy": "judgekit.policy",
    "JudgeNotCalibrated": "judgekit.gate",
    "require_calibrated": "judgekit.gate",
    "Judge": "judgekit.judge",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judgekit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
