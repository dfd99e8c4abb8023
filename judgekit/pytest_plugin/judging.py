"""The `judge` fixture, and a test body run several times as one scenario.

The fixture asks each criterion's judge exactly as calibration did, refuses when the gate blocks
it, and refuses (or, with `judgekit_same_model = warn`, warns) when the judge is the agent's own
model (`judged(..., agent_model=...)`, else `judgekit_agent_model`, else the policy's
`gate.agent_model`; aliases of one model count as one: judgekit.llm.families). A selectively
judged criterion's verdict below its certified threshold is escalated: the test stops as "needs
review" (skipped, or with `judgekit_escalated = error` failed) and the reply joins the criterion's
review queue; in a scenario's run it counts as not passed. Every verdict goes on the test's report
(so under xdist the controller sees it) and, in a scenario, into the run that gave it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import judgekit.gate as gate_api
from judgekit import watch
from judgekit.errors import JudgekitError
from judgekit.gate.counted import Check, JudgeCounts, RunRecord, decide, error_line, is_run_failure
from judgekit.judging.review import enqueue
from judgekit.llm.families import family, same_model
from judgekit.pytest_plugin.paths import ini_path
from judgekit.pytest_plugin.summary import PROPERTY, SCENARIO
from judgekit.report.render import terminal_text
from judgekit.secrets import redact

RESULT = pytest.StashKey[Any]()  # the gate's result, once per process
# the agent's model the ini or the policy declares, read with the gate
_AGENT = pytest.StashKey["str | None"]()
_RUN = pytest.StashKey[RunRecord]()  # the run of a scenario now running
SAME_MODEL = ("refuse", "warn")
# a test whose verdict was escalated: skipped as "needs review", or failed
ESCALATED = ("skip", "error")
NEEDS_REVIEW = "needs review"


class SameModelWarning(UserWarning):
    """A judge of the agent's own model graded it (judgekit_same_model = warn)."""


def result_of(config: pytest.Config) -> Any:
    if RESULT not in config.stash:
        config.stash[RESULT] = check_gate(config)
    return config.stash[RESULT]


def check_gate(config: pytest.Config) -> Any:
    """The gate over every criterion in the project, read from disk once per process."""
    path = config.getoption("--judgekit-config")
    try:
        gate = gate_api.Gate.from_project(
            ini_path(config, None, "judgekit_criteria"),
            ini_path(config, None, "judgekit_sets"),
            Path(path) if path else None,
            root=config.rootpath,
            agent_model=config.getini("judgekit_agent_model") or None,
        ).with_findings(watch.findings_of(None, Path(path) if path else None, root=config.rootpath))
        config.stash[_AGENT] = gate.agent_model  # the ini's, else the policy's
        if config.getini("judgekit_same_model") == "warn":
            # the fixture warns about a judge of the agent's model; the gate does not block it
            gate.agent_model = None
        return gate.check_path(
            ini_path(config, config.getoption("--judgekit-report"), "judgekit_report")
        )
    except JudgekitError as error:
        raise pytest.UsageError(f"judgekit gate: {error}") from None


def task_of(item: pytest.Item) -> str:
    """The task a test instance is a trial of: its test with every parameter but the trial one
    (`trial`, or the name given as `judged(..., trial="run")`). Instances that differ in any other
    parameter are different tasks, not trials of one."""
    trial = next(
        (m.kwargs["trial"] for m in item.iter_markers("judged") if "trial" in m.kwargs), "trial"
    )
    params = getattr(getattr(item, "callspec", None), "params", {})
    if trial not in params:
        return item.nodeid  # not repeated: a task of one trial
    others = ",".join(f"{k}={v!r}" for k, v in sorted(params.items()) if k != trial)
    return f"{item.nodeid.split('[')[0]}[{others}]"


def agent_model_of(item: pytest.Item) -> str | None:
    """The agent's model: the test's `judged(..., agent_model=)`, else the ini's or the policy's."""
    for marker in item.iter_markers("judged"):
        if marker.kwargs.get("agent_model"):
            return str(marker.kwargs["agent_model"])
    result_of(item.config)  # reads the policy, once
    return item.config.stash[_AGENT]


@dataclass(frozen=True)
class _Compared:
    """A comparison as the tally counts a check."""

    passed: bool | None
    reason: str
    escalated: bool = False


def _pairwise(built: Any) -> bool:
    """Whether a built judge is a pairwise criterion's (judgekit.judging.pairwise.PairJudge; told
    by what it does, so the plugin loads no judging module to start)."""
    return hasattr(built, "acompare")


@pytest.fixture
def judge(request: pytest.FixtureRequest) -> Any:
    """The calibrated judge of the test's `judged` criterion.

    Call it as `judge(output, input=..., context=...)`, or `await judge.acall(...)`. With several
    criteria, name one: `judge(output, criterion="id")`.
    """
    ids = [str(arg) for marker in request.node.iter_markers("judged") for arg in marker.args]
    if not ids:
        pytest.fail(
            "the judge fixture needs a criterion: @pytest.mark.judged('criterion-id')",
            pytrace=False,
        )
    return Judges(request.node, ids)


class Judges:
    """The `judge` fixture: one calibrated judge per criterion of the test, built when first
    asked."""

    def __init__(self, node: pytest.Item, ids: list[str]) -> None:
        self.node, self.ids = node, ids
        self._judges: dict[str, Any] = {}

    def __getitem__(self, criterion: str) -> Any:
        if criterion not in self.ids:
            pytest.fail(
                f"criterion {criterion!r} is not one of this test's: "
                f"judged({', '.join(map(repr, self.ids))})",
                pytrace=False,
            )
        if criterion not in self._judges:
            self._judges[criterion] = self._build(criterion)
        return self._judges[criterion]

    def _build(self, criterion: str) -> Any:
        config = self.node.config
        result = result_of(config)
        try:
            built = gate_api.judge_of(
                ini_path(config, None, "judgekit_criteria"),
                criterion,
                result,
                cache_dir=str(config.rootpath / ".judgekit" / "cache"),
            )
        except JudgekitError as error:
            pytest.fail(str(error), pytrace=False)
        agent = agent_model_of(self.node)
        # a regex criterion has no judge
        declared = getattr(getattr(built.criterion, "judge", None), "model", None)
        model = (built.setup.model if built.setup else None) or declared
        if agent and built.refusal is None and same_model(model, agent):
            message = (
                f"judgekit: the judge of {criterion} is the agent's own model (judge {model}, "
                f"agent {agent}: both {family(agent)}); a model grading itself is not evidence. "
                "Calibrate a judge of another model, or set judgekit_same_model = warn to allow it"
            )
            if config.getini("judgekit_same_model") == "warn":
                warnings.warn(SameModelWarning(message), stacklevel=2)
            else:
                pytest.fail(message, pytrace=False)
        return built

    def _one(self, criterion: str | None) -> str:
        if criterion is not None:
            return criterion
        if len(self.ids) != 1:
            pytest.fail(
                f"this test has several criteria ({', '.join(self.ids)}): name one, "
                "judge(output, criterion='id')",
                pytrace=False,
            )
        return self.ids[0]

    def compare(
        self,
        a: str,
        b: str,
        input: str | None = None,
        context: str | None = None,
        criterion: str | None = None,
    ) -> Any:
        """Which of two replies a pairwise criterion's calibrated judge prefers, asked in both
        orders: a judgekit.judging.pairwise.PairVerdict (`.outcome`: a, b, tie, inconsistent or
        abstained; `.winner(...)`, never a win for an inconsistent pair)."""
        cid = self._one(criterion)
        built = self[cid]
        if not _pairwise(built):
            pytest.fail(
                f"criterion {cid!r} is a yes/no one: call judge(output, ...), not judge.compare",
                pytrace=False,
            )
        verdict = built.compare(a, b, input=input, context=context)
        # Counted as a check: passed when both orders agree on a verdict (a, b or a tie),
        # abstained when they disagree or an answer could not be had.
        decided = verdict.outcome in ("a", "b", "tie")  # never an inconsistent pair, tie or not
        counted = _Compared(True if decided else None, f"outcome {verdict.outcome}")
        self._tally(cid, counted, f"a: {a}\nb: {b}", input, context)
        return verdict

    def _yes_no(self, cid: str) -> Any:
        built = self[cid]
        if _pairwise(built):
            pytest.fail(
                f"criterion {cid!r} is pairwise: call judge.compare(a, b, input=...)",
                pytrace=False,
            )
        return built

    def __call__(
        self,
        output: str,
        input: str | None = None,
        context: str | None = None,
        criterion: str | None = None,
    ) -> Any:
        cid = self._one(criterion)
        return self._tally(
            cid, self._yes_no(cid)(output, input=input, context=context), output, input, context
        )

    async def acall(
        self,
        output: str,
        input: str | None = None,
        context: str | None = None,
        criterion: str | None = None,
    ) -> Any:
        cid = self._one(criterion)
        return self._tally(
            cid,
            await self._yes_no(cid).acall(output, input=input, context=context),
            output,
            input,
            context,
        )

    def _tally(
        self, criterion: str, verdict: Any, output: str, input: str | None, context: str | None
    ) -> Any:
        value = {"criterion": criterion, "passed": verdict.passed, "task": task_of(self.node)}
        if self.node.config.getoption("--judgekit-record-text"):  # opt-in: texts may be sensitive
            # redacted here, not only in the record file: user_properties reach --junitxml too
            value["text"] = {
                "input": redact(input) if input is not None else None,
                "output": redact(output),
                "context": redact(context) if context is not None else None,
                "reason": redact(verdict.reason),
            }
        # the reply joins the review queue here (under a lock): no text travels on the report
        if verdict.escalated:
            value["escalated"] = True
            enqueue(
                self.node.config.rootpath,
                criterion,
                [{"input": input, "output": output, "context": context}],
            )
        run = self.node.stash.get(_RUN, None)
        if run is not None:
            value["run"] = run.index
            run.checks.append(Check(criterion, verdict.passed, verdict.reason))
        self.node.user_properties.append((PROPERTY, value))
        if verdict.escalated and run is None:  # in a scenario, the run counts it as not passed
            reason = verdict.reason.removeprefix(NEEDS_REVIEW + ": ")
            message = terminal_text(f"{NEEDS_REVIEW}: {criterion}: {reason}")
            if self.node.config.getini("judgekit_escalated") == "error":
                pytest.fail(message, pytrace=False)
            pytest.skip(message)
        return verdict


def repeat(item: pytest.Item, runs: int, min_passes: int) -> None:
    """Run the test body `runs` times as one scenario: an assertion or error ends a run, not the
    test; then the tally decides, and a scenario that did not pass fails with the tally."""
    once: Callable[[], None] = item.runtest

    def runtest() -> None:
        records = []
        for index in range(runs):
            record = item.stash[_RUN] = RunRecord(index)
            records.append(record)
            try:
                once()
            except BaseException as error:  # noqa: B036 - judged by is_run_failure, re-raised otherwise
                if not is_run_failure(error):
                    raise
                record.error = error_line(error)
        del item.stash[_RUN]
        result = result_of(item.config)
        judges = {d.criterion: JudgeCounts.of(d.confusion) for d in result.decisions}
        scenario = decide(item.nodeid, records, min_passes, judges)
        item.user_properties.append((SCENARIO, scenario.to_dict()))
        if not scenario.passed:
            pytest.fail(terminal_text("\n".join(scenario.lines())), pytrace=False)

    item.runtest = runtest  # type: ignore[method-assign]  # this item's body alone is replaced
