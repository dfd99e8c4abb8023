"""The gate: may suites that rely on a criterion's judge run? Decided from evidence (decision,
evidence, entry), with the label budget (plan) and the guards a test runner uses (guard). Names
load on first use, so `judgekit gate` loads only the light decision path.
"""

from judgekit.lazy import exports

_NAMES = {
    "Decision": "judgekit.gate.result",
    "Gate": "judgekit.gate.decision",
    "GateResult": "judgekit.gate.result",
    "EXIT_CODES": "judgekit.gate.result",
    "JudgeNotCalibrated": "judgekit.errors",
    "plan": "judgekit.gate.label_budget",
    "require_calibrated": "judgekit.gate.guard",
    "calibrated_judge": "judgekit.gate.guard",
    "judge_for": "judgekit.gate.guard",
    "judge_of": "judgekit.gate.guard",
    "judged_elsewhere": "judgekit.gate.guard",
    "RECORDED": "judgekit.judging.judge",
    "tally": "judgekit.gate.tally",
    "Tally": "judgekit.gate.tally",
    "ScenarioFailed": "judgekit.gate.tally",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = exports(__name__, _NAMES)
