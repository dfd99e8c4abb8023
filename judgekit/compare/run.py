"""Judging every candidate on the same examples, in one pool, and measuring each.

The live candidates are asked together: one concurrency budget, one cache (an interrupted
comparison resumes from it, as calibrate does; answers `calibrate` cached are reused), one
progress bar. Recorded candidates are read from their files. Each candidate's calibration is the
one `calibrate` would write (judgekit.pipeline.criterion_report), and its gate decision is the
gate's own (judgekit.gate.decision.Gate) on that report, as if the candidate were the criterion's
judge: the criterion as the candidate judges it, the set on disk, the project's policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from judgekit.compare.candidates import Spec
from judgekit.compare.model import Cost
from judgekit.errors import CallsFailed, InputError, JudgeError
from judgekit.gate.decision import Gate
from judgekit.gate.result import Decision
from judgekit.inputs.catalog import CriterionFile, find_set
from judgekit.inputs.criteria import JUDGED, Criterion
from judgekit.inputs.label_reader import LabelledSet, read_labels
from judgekit.inputs.policy import Policy
from judgekit.inputs.project import load_inputs, select_split
from judgekit.inputs.sets import CalibrationSet
from judgekit.judging.dry_run import Estimate, estimate
from judgekit.judging.jobs import run_sync
from judgekit.judging.matching import match_file
from judgekit.judging.runner import Task, check_some_call_answered, judge_sets
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.judging.verdicts import Verdict
from judgekit.llm.prices import price
from judgekit.llm.protocol import LLM
from judgekit.llm.transports import check_endpoint
from judgekit.pipeline import Options, calibration_of, criterion_report, live_task, run_settings
from judgekit.report.model import CriterionReport, Report


@dataclass
class Measured:
    """One candidate, judged and measured."""

    spec: Spec
    report: CriterionReport
    decision: Decision
    cost: Cost


@dataclass
class Measurements:
    """Every candidate of one criterion, measured on the same set."""

    criterion: Criterion
    set: CalibrationSet
    measured: list[Measured] = field(default_factory=list)
    judging_s: float | None = None


def load(options: Options, criterion_id: str) -> tuple[Criterion, CalibrationSet, CalibrationSet]:
    """The criterion, its whole set and the set of the chosen split, checked as calibrate checks
    them."""
    criteria, sets = load_inputs(options.criteria_dir, options.sets_dir, [criterion_id])
    return criteria[0], sets[criterion_id], select_split(sets, options.split)[criterion_id]


def _task(spec: Spec, examples: CalibrationSet, options: Options) -> Task:
    """The task of asking a live candidate's judge over the examples: one task per candidate, so
    that candidates of one criterion are asked in one run under its own id (the cache is shared
    with calibrate)."""
    if not isinstance(spec.criterion, JUDGED):  # the candidates refuse one (from_options)
        raise InputError.one(
            "--criterion",
            spec.criterion.id,
            "is a regex criterion: it has no judge to compare; choose an LLM or claims criterion",
        )
    return live_task(spec.criterion, examples, options, spec.model)


async def ajudge(
    options: Options,
    specs: list[Spec],
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
    agent_model: str | None = None,
) -> Measurements:
    """Judge every candidate (live ones in one pool) and measure each. `options` are calibrate's:
    where the project is and how judges are asked (the candidates bring their own model, trials
    and verdicts); `agent_model` is checked as `judgekit gate --agent-model` checks it."""
    check_endpoint(options.api_base)
    started = datetime.now(UTC)
    base, whole, chosen = load(options, specs[0].criterion.id)
    policy = options.policy or Policy.load()
    trials: dict[str, list[list[Verdict]]] = {}
    sources: dict[str, str] = {}
    for spec in specs:
        if not spec.live:
            matched = match_file(spec.verdicts, spec.records, {base.id: whole}, every=True)  # type: ignore[arg-type]  # a recorded Spec has verdicts
            if matched.problems:
                raise InputError(matched.problems)
            kept = {e.id for e in chosen.examples}
            trials[spec.name] = [t for t in matched.trials[base.id] if t[0].example_id in kept]
            source = matched.provenance(spec.criterion, None, spec.verdicts)  # type: ignore[arg-type]  # a recorded Spec has verdicts
            sources[spec.name] = f"{source}#{spec.column}" if spec.column else source
    live = [s for s in specs if s.live]
    judging_s = None
    gold: dict[str, dict[str, Verdict]] = {}
    if live:
        run = await judge_sets(
            [_task(s, chosen, options) for s in live],
            run_settings(replace(options, policy=policy, stop_early=False), [base.id]),
            llm,
            progress,
        )
        for s, judged, checked in zip(live, run.verdicts, run.gold, strict=True):
            try:
                check_some_call_answered(s.name, s.model or "", judged)
            except CallsFailed as error:
                raise JudgeError(
                    f"every call of candidate {s.name!r} (model {error.model!r}, {error.examples} "
                    f"examples) failed: {error.cause}. Nothing was written; the other candidates' "
                    "answers are cached (unless --no-cache). Fix its endpoint or leave it out, "
                    "and run again"
                ) from None
            trials[s.name], sources[s.name], gold[s.name] = judged, "live", checked
        judging_s = run.elapsed_s
    labels = read_labels(find_set(options.sets_dir, base.id), base.id)
    out = Measurements(base, chosen, judging_s=judging_s)
    # Recorded candidates carry no model: the options' own (calibrate's --model) is not theirs.
    measuring = replace(options, model=None)
    for spec in specs:
        measured = calibration_of(
            spec.criterion,
            chosen,
            trials[spec.name],
            sources[spec.name],
            spec.model if spec.live else None,
            measuring,
        )
        report = criterion_report(measured, measuring, started, None, gold.get(spec.name))
        decision = decide(report, spec, policy, labels, agent_model)
        out.measured.append(
            Measured(spec, report, decision, cost_of(spec, report, trials[spec.name]))
        )
    return out


def judge(
    options: Options,
    specs: list[Spec],
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
    agent_model: str | None = None,
) -> Measurements:
    """`ajudge`, from code without an event loop of its own."""
    return run_sync(ajudge(options, specs, llm, progress, agent_model))


def decide(
    report: CriterionReport,
    spec: Spec,
    policy: Policy,
    labels: LabelledSet,
    agent_model: str | None = None,
) -> Decision:
    """The gate's decision on a candidate's report, as if the criterion file were the candidate's
    (the agent's model, when declared, is checked as `judgekit gate --agent-model` checks it)."""
    digest = (report.inputs or {}).get("criterion") or ""
    path = spec.variant or Path(f"{report.id}.yaml")
    # the candidate's criterion is held in memory: its setup is the one its report measured
    setup = (
        JudgeSetup.from_json(report.judge.setup) if report.judge and report.judge.setup else None
    )
    gate = Gate(
        policy,
        {report.id: CriterionFile(report.id, path, digest, setup=setup)},
        {report.id: labels},
        agent_model=agent_model,
    )
    return gate.check(Report(criteria=[report]), [report.id]).decisions[0]


def cost_of(spec: Spec, report: CriterionReport, all_trials: list[list[Verdict]]) -> Cost:
    """The report's calls and latency, and the cost of 1,000 verdicts (one per example, every
    trial) priced on every answer's tokens, cached ones too: a resumed comparison prices the
    same."""
    usage = report.usage
    if usage is None:
        return Cost()
    usages = [v.usage for t in all_trials for v in t if v.usage is not None]
    prompt = sum(u.all_prompt_tokens for u in usages)
    completion = sum(u.all_completion_tokens for u in usages)
    total = (
        price(spec.model, prompt, completion)
        if spec.model and all_trials and (prompt or completion)
        else None
    )
    return Cost(
        calls=usage.calls,
        cached=usage.cached,
        prompt_tokens=prompt,
        completion_tokens=completion,
        per_1000_verdicts=None if total is None else total / len(all_trials) * 1000,
        latency_p50_s=usage.latency_p50_s,
        latency_p95_s=usage.latency_p95_s,
    )


def dry_run(options: Options, specs: list[Spec], llm: LLM | None = None) -> dict[str, Estimate]:
    """Per candidate, what judging it would ask, asking nothing (judgekit.judging.dry_run)."""
    check_endpoint(options.api_base)
    base, _, chosen = load(options, specs[0].criterion.id)
    live = [s for s in specs if s.live]
    settings = run_settings(replace(options, stop_early=False), [base.id])
    # one estimate per candidate: each is its own task over the same examples
    found = [estimate([base], [_task(s, chosen, options)], {}, settings, llm)[0] for s in live]
    # a candidate is recorded exactly when it names a verdict file (Spec.live)
    out = {
        s.name: Estimate(base.id, str(Source("recorded", s.verdicts.name)))
        for s in specs
        if s.verdicts is not None
    }
    out.update({s.name: e for s, e in zip(live, found, strict=True)})
    return {s.name: out[s.name] for s in specs}
