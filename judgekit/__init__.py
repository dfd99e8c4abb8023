"""judgekit: calibrate LLM judges against human labels, and gate eval suites on judges that can
be trusted.

Importing judgekit does nothing: no clients, no key reads, no disk, no network. The names below
are loaded on first use.

>>> import judgekit
>>> judgekit.Options().concurrency
16
"""

from typing import TYPE_CHECKING

from judgekit.lazy import exports

if TYPE_CHECKING:  # what a type checker sees: the real names, so each keeps its signature
    from judgekit.errors import (
        CallsFailed as CallsFailed,
        InputError as InputError,
        JudgeError as JudgeError,
        JudgekitError as JudgekitError,
        JudgeNotCalibrated as JudgeNotCalibrated,
        ModelUnavailable as ModelUnavailable,
        ProviderAuthError as ProviderAuthError,
        ProviderRejects as ProviderRejects,
        ProviderUnreachable as ProviderUnreachable,
    )
    from judgekit.gate.counted import (
        ScenarioFailed as ScenarioFailed,
        Tally as Tally,
        tally as tally,
    )
    from judgekit.gate.decision import Gate as Gate
    from judgekit.gate.result import GateResult as GateResult
    from judgekit.inputs.criteria import (
        ClaimsCriterion as ClaimsCriterion,
        LLMCriterion as LLMCriterion,
        RegexCriterion as RegexCriterion,
    )
    from judgekit.inputs.policy import Policy as Policy
    from judgekit.inputs.project import load_inputs as load_inputs
    from judgekit.inputs.sets import Example as Example
    from judgekit.integrations.guards import (
        calibrated_judge as calibrated_judge,
        require_calibrated as require_calibrated,
    )
    from judgekit.judging.judge import Judge as Judge
    from judgekit.judging.verdicts import Verdict as Verdict
    from judgekit.pipeline import (
        Options as Options,
        dry_run as dry_run,
    )
    from judgekit.report.model import Report as Report
    from judgekit.stats.pass_rates import (
        corrected_pass_rate as corrected_pass_rate,
        pass_at_k as pass_at_k,
        pass_hat_k as pass_hat_k,
    )
    from judgekit.watch.calibration import (
        acalibrate as acalibrate,
        calibrate as calibrate,
    )

_EXPORTS = {
    "calibrate": "judgekit.watch.calibration",
    "acalibrate": "judgekit.watch.calibration",
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
    "require_calibrated": "judgekit.integrations.guards",
    "calibrated_judge": "judgekit.integrations.guards",
    "Judge": "judgekit.judging.judge",
    "tally": "judgekit.gate.counted",
    "Tally": "judgekit.gate.counted",
    "ScenarioFailed": "judgekit.gate.counted",
    "corrected_pass_rate": "judgekit.stats.pass_rates",
    "pass_at_k": "judgekit.stats.pass_rates",
    "pass_hat_k": "judgekit.stats.pass_rates",
}

__all__ = sorted(_EXPORTS)
if not TYPE_CHECKING:  # at run time each name loads on first use; a checker reads the imports above
    __getattr__, __dir__ = exports(__name__, _EXPORTS)
