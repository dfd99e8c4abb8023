"""The Judge a test calls: `judge(output, input=..., context=...)` -> Verdict, asked exactly as its
criterion was calibrated, or refusing to judge.

>>> from judgekit.inputs.criteria import RegexCriterion
>>> criterion = RegexCriterion(
...     id="r", kind="regex", question="clean?", pattern="TODO", match_means="fail"
... )
>>> check = Judge(criterion)
>>> check("All done.").passed
True
"""

from __future__ import annotations

from dataclasses import replace

from judgekit.errors import InputError, JudgeNotCalibrated
from judgekit.inputs.criteria import ClaimsCriterion, Criterion, LLMCriterion, RegexCriterion
from judgekit.inputs.sets import Example
from judgekit.judging.build_setup import setup_of
from judgekit.judging.claims import ClaimsJob, claims_jobs
from judgekit.judging.jobs import (
    Asking,
    Job,
    endpoint_named,
    jobs_for,
    reask_for,
    run_sync,
)
from judgekit.judging.selective import escalate, wants_logprobs
from judgekit.judging.setup import JudgeSetup
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm import open_llm
from judgekit.llm.protocol import LLM

RECORDED = (
    "calibrated from recorded verdicts of another judge ({source}); "
    "calibrate judgekit's judge live, or judge with the tool that recorded them"
)


class Judge:
    """A judge for one criterion, to call from a test.

    Given `setup` (the judge its calibration measured: judgekit.judging.setup.JudgeSetup), it asks
    exactly that judge, through the usual cache and retries (without one, the judge the criterion
    defines, as a first calibration would ask it); given `thresholds` (selective judging,
    certified by the gate), a verdict below the first goes to the judge the criterion escalates
    to, and one below that is escalated to a person (`passed=None, escalated=True`, its
    confidence kept); given `refusal`, it raises that
    JudgeNotCalibrated instead of judging — the gate (judgekit.gate.judge_for) builds it either
    way — and it never stands in for another tool's judge whose recorded verdicts were
    calibrated. A regex criterion is checked by code.
    """

    def __init__(
        self,
        criterion: Criterion,
        setup: JudgeSetup | None = None,
        cache_dir: str | None = ".judgekit/cache",
        llm: LLM | None = None,
        refusal: JudgeNotCalibrated | None = None,
        thresholds: tuple[float | None, ...] | None = None,
    ):
        self.criterion, self.setup = criterion, setup
        self.cache_dir, self.llm, self.refusal = cache_dir, llm, refusal
        # Selective judging: the certified confidence threshold of the judge and of each it
        # escalates to.
        self.thresholds = thresholds
        if self.refusal is None and setup is not None and setup.kind == "recorded":
            self.refusal = JudgeNotCalibrated(
                "FAIL", [(criterion.id, "FAIL", RECORDED.format(source="a verdict file"))]
            )

    def __call__(
        self, output: str, input: str | None = None, context: str | None = None
    ) -> Verdict:
        """The verdict on one reply (works inside a running event loop too)."""
        return run_sync(self.acall(output, input=input, context=context))

    async def acall(
        self, output: str, input: str | None = None, context: str | None = None
    ) -> Verdict:
        """The verdict on one reply, awaited: for async tests and notebooks."""
        if self.refusal is not None:
            raise self.refusal
        fields = {"input": input, "output": output, "context": context}
        criterion = self.criterion
        if isinstance(criterion, RegexCriterion):
            return Verdict("-", *criterion.explain(fields))
        asked = self.setup
        model = (asked.model if asked else None) or criterion.judge.model
        if not model:
            raise InputError.one(
                f"criteria/{criterion.id}.yaml",
                "judge.model",
                "no judge model; set judge.model in the criterion",
            )
        if isinstance(criterion, ClaimsCriterion) and not (context or "").strip():
            raise InputError.one(
                f"criteria/{criterion.id}.yaml",
                "context",
                "a claims criterion checks the "
                "reply against its source material: call judge(output, context=source)",
            )
        if asked is None:
            # The judge the criterion defines, asked as a first calibration asks it.
            asked = setup_of(criterion, model=model, api_base=None, via="auto", structured=True)
        trials, via = asked.trials, asked.via or "auto"
        example = Example(id="-", output=output, input=input, context=context, passed=True)
        asking = Asking(
            # The measured endpoint, as the criterion or the environment names it (with their
            # credentials); one named by nothing now is refused.
            endpoint_named(criterion, asked.endpoint, model),
            asked.structured is not False,
            reask_for(criterion),
            logprobs=wants_logprobs(self.thresholds, trials),
            via=via,
        )
        verdict = await self._ask(criterion, model, example, trials, asking)
        if self.thresholds is None:
            return verdict
        first = escalate(verdict, self.thresholds[0])
        after = criterion.judge.escalate_to
        if (
            not first.escalated
            or len(self.thresholds) < 2
            or self.thresholds[1] is None
            or after is None
        ):
            return first
        second = escalate(
            await self._ask(criterion, after.model, example, trials, asking),
            self.thresholds[1],
        )
        if not second.escalated:
            return second
        unsure = (first.reason or "").removeprefix("needs review: ")
        return replace(
            second, reason=f"{second.reason} for {after.model} (and {unsure} for {model})"
        )

    async def _ask(
        self,
        criterion: LLMCriterion | ClaimsCriterion,
        model: str,
        example: Example,
        trials: int,
        asking: Asking,
    ) -> Verdict:
        """The majority verdict of `model`, asked as `asking` says, over `trials` on one example."""
        jobs: list[Job] | list[ClaimsJob]
        if isinstance(criterion, ClaimsCriterion):
            jobs = claims_jobs(criterion, [example], model, trials, asking)
        else:
            jobs = jobs_for(criterion, [example], model, trials, asking)
        llm = self.llm or open_llm(model, asking.endpoint, self.cache_dir, via=asking.via)
        try:
            return majority([await job.ask(llm) for job in jobs])
        finally:
            if self.llm is None:
                await llm.aclose()
