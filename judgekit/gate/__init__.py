"""The gate: may suites that rely on a criterion's judge run? Decided from evidence (decision,
evidence, entry), with the label budget (plan), the judge a runner holds (guard) and the guards a
test runner calls from Python (judgekit.integrations.guards, which read the history's findings).
Names load on first use, so `judgekit gate` loads only the light decision path.
"""

from typing import TYPE_CHECKING

from judgekit.lazy import exports

if TYPE_CHECKING:  # what a type checker sees: the real names, so each keeps its signature
    from judgekit.errors import JudgeNotCalibrated as JudgeNotCalibrated
    from judgekit.gate.counted import (
        ScenarioFailed as ScenarioFailed,
        Tally as Tally,
        tally as tally,
    )
    from judgekit.gate.decision import Gate as Gate
    from judgekit.gate.guard import (
        judge_for as judge_for,
        judge_of as judge_of,
        judged_elsewhere as judged_elsewhere,
    )
    from judgekit.gate.label_budget import plan as plan
    from judgekit.gate.result import (
        EXIT_CODES as EXIT_CODES,
        Decision as Decision,
        GateResult as GateResult,
    )
    from judgekit.integrations.guards import (
        calibrated_judge as calibrated_judge,
        require_calibrated as require_calibrated,
    )
    from judgekit.judging.judge import RECORDED as RECORDED

_NAMES = {
    "Decision": "judgekit.gate.result",
    "Gate": "judgekit.gate.decision",
    "GateResult": "judgekit.gate.result",
    "EXIT_CODES": "judgekit.gate.result",
    "JudgeNotCalibrated": "judgekit.errors",
    "plan": "judgekit.gate.label_budget",
    "require_calibrated": "judgekit.integrations.guards",
    "calibrated_judge": "judgekit.integrations.guards",
    "judge_for": "judgekit.gate.guard",
    "judge_of": "judgekit.gate.guard",
    "judged_elsewhere": "judgekit.gate.guard",
    "RECORDED": "judgekit.judging.judge",
    "tally": "judgekit.gate.counted",
    "Tally": "judgekit.gate.counted",
    "ScenarioFailed": "judgekit.gate.counted",
}
__all__ = sorted(_NAMES)
if not TYPE_CHECKING:  # at run time each name loads on first use
    __getattr__, __dir__ = exports(__name__, _NAMES)
