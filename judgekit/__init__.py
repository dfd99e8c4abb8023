"""judgekit: calibrate LLM judges against human labels, and gate eval suites on judges that can be trusted.

Importing judgekit does nothing: no clients, no key reads, no disk, no network. The names below
are loaded on first use.

>>> import judgekit
>>> judgekit.Options().concurrency
16
"""

from judgekit.lazy import exports

_EXPORTS = {
    "calibrate": "judgekit.pipeline",
    "acalibrate": "judgekit.pipeline",
    "dry_run": "judgekit.pipeline",
    "Options": "judgekit.pipeline",
    "load_inputs": "judgekit.inputs.project",
    "Report": "judgekit.report.model",
    "Verdict": "judgekit.judging.verdicts",
    "Example": "judgekit.inputs.sets",
    "LLMCriterion": "judgekit.inputs.criteria",
    "RegexCriterion": "judgekit.inputs.criteria",
    "ClaimsCriterion": "judgekit.inputs.criteria",
    "JudgekitError": "judgekit.errors",
    "InputError": "judgekit.errors",
    "JudgeError": "judgekit.errors",
    "JudgeNotCalibrated": "judgekit.errors",
    "ProviderUnreachable": "judgekit.errors",
    "ProviderAuthError": "judgekit.errors",
    "ProviderRejects": "judgekit.errors",
    "ModelUnavailable": "judgekit.errors",
    "CallsFailed": "judgekit.errors",
    "Gate": "judgekit.gate.decision",
    "GateResult": "judgekit.gate.result",
    "Policy": "judgekit.inputs.policy",
    "require_calibrated": "judgekit.gate.guard",
    "calibrated_judge": "judgekit.gate.guard",
    "Judge": "judgekit.judging.judge",
    "tally": "judgekit.gate.tally",
    "Tally": "judgekit.gate.tally",
    "ScenarioFailed": "judgekit.gate.tally",
    "corrected_pass_rate": "judgekit.stats.pass_rates",
    "pass_at_k": "judgekit.stats.pass_rates",
    "pass_hat_k": "judgekit.stats.pass_rates",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = exports(__name__, _EXPORTS)
