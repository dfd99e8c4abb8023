"""The calibration pipeline: criteria + sets -> verdicts (recorded, by code, or by a live judge)
-> metrics -> report. The CLI's `calibrate` and the Python API's (`judgekit.calibrate`, which
records the run in the history as the CLI does) both measure with `measure`.

>>> from pathlib import Path
>>> project = Path(__file__).resolve().parent.parent  # the repository's bundled criteria and sets
>>> report = measure(Options(criteria_dir=project / "criteria",
...                          sets_dir=project / "calibration_sets",
...                          criterion_ids=["no-email-address"]))
>>> report.criteria[0].n, report.criteria[0].metrics["tpr"]
(40, 1.0)
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from judgekit.errors import InputError, Problem
from judgekit.fingerprint import canonical_hash
from judgekit.inputs.catalog import criterion_paths, declared_kind
from judgekit.inputs.criteria import (
    JUDGED,
    ClaimsCriterion,
    Criterion,
    LLMCriterion,
    RegexCriterion,
    with_trials,
)
from judgekit.inputs.files import open_source
from judgekit.inputs.heldout import in_test_split, named_by_identity, unrecorded_looks
from judgekit.inputs.pair import file_digest
from judgekit.inputs.pairwise import (
    PairSet,
    PairwiseCriterion,
    load_pair_sets,
    load_pairwise_criteria,
)
from judgekit.inputs.policy import Policy, Selective, parse_duration
from judgekit.inputs.project import load_inputs, select_split
from judgekit.inputs.sets import CalibrationSet, Example
from judgekit.judging.build_setup import endpoint_for, setup_now, setup_of
from judgekit.judging.claims import recorded_gold
from judgekit.judging.dry_run import Estimate, estimate
from judgekit.judging.jobs import run_sync
from judgekit.judging.matching import match_file
from judgekit.judging.pairwise import (
    PAIR_PROBES,
    PairAsking,
    PairVerdict,
    as_recorded_for,
    judge_pairs,
    pair_probed,
    pair_setup,
    read_recorded_pairs,
)
from judgekit.judging.probes import PROBES, count_flips, directions, probed, probes_for, variant_of
from judgekit.judging.prompts import judge_spec
from judgekit.judging.recorded import iter_recorded
from judgekit.judging.runner import (
    Calibration,
    RunSettings,
    Stop,
    Task,
    check_some_call_answered,
    check_some_verdict_given,
    judge_sets,
    stack_of,
    task_of,
)
from judgekit.judging.selective import confidence_source
from judgekit.judging.setup import LIVE, JudgeSetup, Source, endpoint_of
from judgekit.judging.verdict_log import VerdictLog, recorded_claims
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm.families import family
from judgekit.llm.protocol import LLM
from judgekit.llm.retry import RetryPolicy
from judgekit.llm.transports import check_endpoint
from judgekit.report.model import (
    ConfusionCounts,
    CriterionReport,
    Disagreement,
    EarlyStop,
    JudgeInfo,
    ProbeFigures,
    Report,
    UsageSummary,
    annotators,
    claim_stages,
    consistency,
    slices,
)
from judgekit.report.pairwise import PairwiseReport, pairwise_report
from judgekit.report.parts import ById, Certificate, agreement, certificate_of, check_drawn
from judgekit.report.render import finite
from judgekit.secrets import public_url
from judgekit.signing import UNSEALED
from judgekit.stats.metrics import clopper_pearson
from judgekit.stats.sequential import Rule


@dataclass
class Options:
    """Everything `judgekit calibrate` can be told. Defaults match the CLI's."""

    criteria_dir: Path = Path("criteria")
    sets_dir: Path = Path("calibration_sets")
    criterion_ids: Sequence[str] = ()
    verdicts: Path | None = None
    model: str | None = None
    api_base: str | None = None
    concurrency: int = 16
    trials: int | None = None
    cache_dir: Path | None = Path(".judgekit/cache")
    timeout_s: float = 60.0
    split: str | None = None
    seed: int = 0
    structured: bool = True
    via: str = "auto"
    retry: RetryPolicy | None = None
    stop_early: bool = False
    # Early stopping's rule (judgekit.stats.sequential): "sequential" (interim looks) or "exact".
    stop_rule: Rule = "sequential"
    policy: Policy | None = None  # early stopping's thresholds; default: the project's gate policy
    # Every answer asked again and the cached one replaced (`calibrate --refresh`).
    refresh: bool = False
    # When each verdict file (by the digest of its bytes) was first calibrated, from the report and
    # the history: a recorded verdict without a time of its own is that old (never the file's
    # mtime, which a fresh clone resets); a file not in it is first calibrated now.
    recorded_times: dict[str, float] = field(default_factory=dict)
    # Per criterion, when a recheck found its judge changed (the history's findings): cached
    # answers older than that are asked again.
    changed_at: dict[str, float] = field(default_factory=dict)
    # judge only this many frozen examples of each set (`judgekit recheck`)
    canary: int | None = None
    # Where `judgekit.calibrate` records the run (`--history`): None is where the CLI finds it
    # ($JUDGEKIT_HISTORY_URL, the settings' history_url, else .judgekit/history.sqlite).
    history: str | Path | None = None
    # False is `--no-history`: nothing is recorded, so a run on test-split examples is refused
    # (a look at the test split that nothing would count; judgekit.inputs.heldout).
    keep_history: bool = True


def probe_figures(
    criterion: Criterion,
    labelled: Sequence[tuple[str, bool, bool | None]],
    probes: Mapping[str, list[list[Verdict]]],
) -> list[ProbeFigures]:
    """The report's figures of each probe run, in each direction: `labelled` is each judged
    example's (id, label, final verdict), `probes` the trials on each rewrite, by probe and the id
    rewritten."""
    ids = probed(criterion.kind, labelled)
    label = {rid: y for rid, y, _ in labelled}
    out = []
    for name, judged in probes.items():
        said = {trials[0].example_id: majority(trials).passed for trials in judged}
        for toward_pass in directions(criterion.kind):
            found = count_flips(name, [(rid, label[rid]) for rid in ids], said, toward_pass)
            out.append(
                ProbeFigures(
                    probe=name,
                    toward="PASS" if toward_pass else "FAIL",
                    why=PROBES[name].why,
                    tried=found.tried,
                    flipped=found.flipped,
                    abstained=found.abstained,
                    rate=found.flipped / found.tried if found.tried else None,
                    interval=(0.0, 1.0)
                    if not found.tried
                    else clopper_pearson(found.flipped, found.tried),
                    bought=list(found.bought[:5]),
                )
            )
    return out


def model_for(
    criterion: LLMCriterion | ClaimsCriterion | PairwiseCriterion, options: Options
) -> str:
    model = options.model or criterion.judge.model
    if not model:
        raise InputError.one(
            options.criteria_dir / f"{criterion.id}.yaml",
            "judge.model",
            "no judge model; set judge.model in the criterion or pass --model",
        )
    return model


def measure(
    options: Options, llm: LLM | None = None, progress: Callable[[int, int], None] | None = None
) -> Report:
    """Measure every chosen criterion's judge and return the report. Records no look at the test
    split and writes no history: `judgekit.calibrate` (judgekit.watch.calibration) and the
    CLI do, around this. Works inside a running event loop too (a notebook, an async test);
    there, `await ameasure(...)` is the same."""
    return run_sync(ameasure(options, llm, progress))


async def ameasure(
    options: Options, llm: LLM | None = None, progress: Callable[[int, int], None] | None = None
) -> Report:
    """`measure`, awaited: for code that already runs an event loop."""
    report, _ = await ameasure_read(options, llm, progress)
    return report


def measure_read(
    options: Options, llm: LLM | None = None, progress: Callable[[int, int], None] | None = None
) -> tuple[Report, dict[str, CalibrationSet]]:
    """`measure`, and the whole sets it read (the gate deciding on them next reads them once)."""
    return run_sync(ameasure_read(options, llm, progress))


async def ameasure_read(
    options: Options,
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    unrecorded: str | None = None,
) -> tuple[Report, dict[str, CalibrationSet]]:
    """`measure_read`, awaited. `unrecorded`: the run records no look, so sets that hold
    test-split examples are refused, on the read that is measured and before any judge is asked
    (judgekit.inputs.heldout.unrecorded_looks), with this fix named."""
    started = datetime.now(UTC)  # when the inputs were read: a later calibration is a newer one
    # read once: judging (run_settings) and certifying use it
    policy = options.policy or Policy.load()
    options = replace(options, policy=policy)
    pair_criteria = load_pairwise_criteria(options.criteria_dir, options.criterion_ids)
    rest = [i for i in options.criterion_ids if i not in {c.id for c in pair_criteria}]
    if pair_criteria and ((options.criterion_ids and not rest) or not _judges_yes_no(options)):
        return Report(criteria=[], pairwise=await measure_pairwise(pair_criteria, options, llm)), {}
    options = replace(options, criterion_ids=rest) if options.criterion_ids else options
    # every input read and checked before any judge is paid for, the pairwise ones' too
    ready = _prepare(options, started, unrecorded)
    pairs = await measure_pairwise(pair_criteria, options, llm) if pair_criteria else []
    trials_by_criterion, sources, models, sets = (
        ready.known,
        ready.sources,
        {t.criterion.id: t.model for t in ready.tasks},
        ready.sets,
    )
    judging_s = None
    stops: dict[str, Stop] = {}
    gold: dict[str, dict[str, Verdict]] = {}
    escalated: dict[str, list[list[Verdict]]] = {}
    probed: dict[str, dict[str, list[list[Verdict]]]] = {}
    if ready.settings is not None:  # made exactly when criteria are left to judge (_prepare)
        run = await judge_sets(ready.tasks, ready.settings, llm, progress)
        for task, trials, stop, checked in zip(
            ready.tasks, run.verdicts, run.stops, run.gold, strict=True
        ):
            cid = task.criterion.id
            check_some_call_answered(cid, task.model, trials)
            if options.canary is None:  # a recheck's canary abstaining on all is drift, recorded
                check_some_verdict_given(cid, task.model, trials)
            trials_by_criterion[cid], sources[cid], gold[cid] = trials, "live", checked
            if stop is not None:
                stops[cid] = stop
        judging_s = run.elapsed_s
        escalated = await _escalations(ready, trials_by_criterion, options, llm)
        probed = await _probe_runs(ready, trials_by_criterion, options, llm, policy)

    reports = [
        criterion_report(
            calibration_of(
                c, sets[c.id], trials_by_criterion[c.id], sources[c.id], models.get(c.id), options
            ),
            options,
            started,
            stops.get(c.id),
            gold.get(c.id),
            policy.for_criterion(c.id).selective,
            escalated.get(c.id),
            probed.get(c.id),
        )
        for c in ready.criteria
    ]
    if options.canary:  # a re-check judges a subset of the set it checks: it names that set
        reports = [
            r.model_copy(update={"set_fingerprint": ready.chosen[r.id].fingerprint})
            for r in reports
        ]
    if ready.verdicts_digest is not None:  # measured from a verdict file: which one, by content
        reports = [
            r.model_copy(update={"inputs": {**(r.inputs or {}), "verdicts": ready.verdicts_digest}})
            if r.judge and Source.kind_of(r.judge.source) in ("recorded", "replayed")
            else r
            for r in reports
        ]
    return Report(criteria=reports, pairwise=pairs, judging_s=judging_s), ready.whole


def _judges_yes_no(options: Options) -> bool:
    """Whether the folder holds a yes/no criterion (any kind but pairwise)."""
    return any(declared_kind(p) != "pairwise" for p in criterion_paths(options.criteria_dir))


async def measure_pairwise(
    criteria: Sequence[PairwiseCriterion], options: Options, llm: LLM | None = None
) -> list[PairwiseReport]:
    """Each pairwise criterion's judge measured on its set: asked live in both orders (through the
    same cached, retried stack as any judge), or read from the verdict file (`--verdicts`, a
    column per order)."""
    sets = load_pair_sets(options.sets_dir, criteria, options.split)
    out = []
    for criterion in criteria:
        pairs = sets[criterion.id]
        inputs = {"criterion": criterion.digest or "", "set": pairs.digest or ""}
        orders, probes = 2, dict[str, list[PairVerdict]]()
        if options.verdicts is not None:
            digest, verdicts, setup = _recorded_pairs(criterion, pairs, options.verdicts, options)
            inputs["verdicts"] = digest
            source = Source("recorded", options.verdicts.name)
            # another tool may have asked in one order only: said, never counted as consistent
            orders = 1 if all(v.b_first is None for v in verdicts) else 2
        else:
            verdicts, setup, probes = await _live_pairs(criterion, pairs, options, llm)
            source = LIVE
        out.append(
            pairwise_report(
                criterion.id,
                criterion.question,
                pairs,
                verdicts,
                setup,
                source=source,
                inputs=inputs,
                inconsistent=criterion.inconsistent,
                split=options.split,
                orders=orders,
                probes=probes,
            )
        )
    return out


def _recorded_pairs(
    criterion: PairwiseCriterion, pairs: PairSet, path: Path, options: Options
) -> tuple[str, list[PairVerdict], JudgeSetup]:
    """A pairwise criterion's verdicts from the verdict file: one record per pair of the set (a
    copy's record, under the copy's id, counts for the pair kept), none of ids the set lacks."""
    digest, by_candidate = read_recorded_pairs(path, criterion.id)
    where = str(path)
    if len(by_candidate) > 1 or None not in by_candidate:
        raise InputError.one(
            where,
            "candidate",
            f"holds the verdicts of {len(by_candidate)} candidate judge(s) of {criterion.id}; "
            f"compare them with `judgekit compare -c {criterion.id} --verdicts {where}`",
        )
    found = by_candidate[None]
    # a recorded verdict has no time of its own: its file's first calibration's (the report's or
    # the history's word for it), else now
    first_read = options.recorded_times.get(digest, time.time())
    copy_of = {c: kept for kept, copies in pairs.copies.items() for c in copies}
    known = {e.id for e in pairs.examples} | set(copy_of)
    problems = [
        Problem(where, f"id {rid}", f"is not a pair of {criterion.id}'s set; remove it")
        for rid in found
        if rid not in known
    ]
    verdicts = []
    for e in pairs.examples:
        v, _ = as_recorded_for(e, pairs, found)  # copies that disagree: an abstention, said
        if v is None:
            problems.append(
                Problem(where, f"id {e.id}", f"has no recorded verdict for {criterion.id}; add one")
            )
        else:
            verdicts.append(replace(v, at=first_read))
    if problems:
        raise InputError(problems)
    model = options.model or criterion.judge.model
    setup = pair_setup(
        criterion,
        model=model,
        endpoint=None,
        via=None,
        structured=None,
        source=Source("recorded", path.name),
    )
    return digest, verdicts, setup


async def _live_pairs(
    criterion: PairwiseCriterion, pairs: PairSet, options: Options, llm: LLM | None
) -> tuple[list[PairVerdict], JudgeSetup, dict[str, list[PairVerdict]]]:
    """A pairwise judge asked live on its pairs in both orders, and its probes."""
    model = model_for(criterion, options)
    endpoint = endpoint_of(criterion.judge.api_base, options.api_base, model)
    setup = pair_setup(
        criterion, model=model, endpoint=endpoint, via=options.via, structured=options.structured
    )
    asking = PairAsking(
        model,
        endpoint,
        options.via,
        options.structured,
        criterion.judge.reask_unreadable
        if criterion.judge.reask_unreadable is not None
        else (options.retry or RetryPolicy()).unreadable,
    )
    settings = run_settings(options, [criterion.id])
    stack = llm or stack_of(settings, model, endpoint, options.via)
    try:
        verdicts = await judge_pairs(stack, criterion, pairs.examples, asking, options.concurrency)
        if verdicts and all(v.why and "error" in v.why for v in verdicts):
            raise InputError.one(
                options.criteria_dir / f"{criterion.id}.yaml",
                "judge.model",
                f"no call to {model} was answered ({verdicts[0].why}); check the model, its "
                "endpoint and its key",
            )
        probed = await _pair_probes(criterion, pairs, verdicts, options, (stack, asking))
    finally:
        if llm is None:
            await stack.aclose()
    return verdicts, setup, probed


async def _pair_probes(
    criterion: PairwiseCriterion,
    pairs: PairSet,
    verdicts: Sequence[PairVerdict],
    options: Options,
    asked: tuple[LLM, PairAsking],
) -> dict[str, list[PairVerdict]]:
    """A pairwise judge's robustness probes (its `probes:`, or every one under a policy that sets
    max_probe_flip): the pairs it decided as labelled, rewritten by each probe and judged by the
    same judge, through the same cache; per probe, the verdicts by the original pair's id."""
    policy = options.policy or Policy.load()
    names = (
        list(PAIR_PROBES)
        if policy.for_criterion(criterion.id).max_probe_flip is not None
        else list(dict.fromkeys(criterion.probes))
    )
    if not names or options.canary is not None:
        return {}
    by_id = {e.id: e for e in pairs.examples}
    labels = {e.id: e.gold for e in pairs.examples}
    chosen = pair_probed(labels, {v.example_id: v for v in verdicts}, criterion.inconsistent)
    out: dict[str, list[PairVerdict]] = {}
    stack, asking = asked
    for name in names:
        made = [(rid, PAIR_PROBES[name].variant(by_id[rid])) for rid in chosen]
        kept = [(rid, v) for rid, v in made if v is not None]
        judged = await judge_pairs(
            stack, criterion, [v for _, v in kept], asking, options.concurrency
        )
        out[name] = [replace(v, example_id=rid) for (rid, _), v in zip(kept, judged, strict=True)]
    return out


async def _escalations(
    ready: _Ready, verdicts: dict[str, list[list[Verdict]]], options: Options, llm: LLM | None
) -> dict[str, list[list[Verdict]]]:
    """The judges escalated to (a selective criterion's `judge.escalate_to`), each calibrated on the
    examples its criterion's judge judged: the cascade is certified as a whole."""
    settings = ready.settings
    if settings is None:
        return {}
    cascade = []
    for task in ready.tasks:
        c = task.criterion
        if isinstance(c, LLMCriterion) and c.judge.escalate_to and c.id in settings.selective:
            judged = {t[0].example_id for t in verdicts[c.id]}
            examples = CalibrationSet(
                c.id,
                task.examples.path,
                tuple(e for e in task.examples.examples if e.id in judged),
            )
            cascade.append(live_task(c, examples, options, c.judge.escalate_to.model))
    if not cascade:
        return {}
    run = await judge_sets(cascade, replace(settings, stop_early=None), llm)
    for task, trials in zip(cascade, run.verdicts, strict=True):
        check_some_call_answered(task.criterion.id, task.model, trials)
    return {task.criterion.id: trials for task, trials in zip(cascade, run.verdicts, strict=True)}


async def _probe_runs(
    ready: _Ready,
    verdicts: dict[str, list[list[Verdict]]],
    options: Options,
    llm: LLM | None,
    policy: Policy,
) -> dict[str, dict[str, list[list[Verdict]]]]:
    """Each live criterion's robustness probes (judgekit.judging.probes.probes_for: its `probes:`,
    or the default ones under a policy that gates them): the replies its judge got right,
    rewritten by each probe and judged by the same judge, through the same cache. Per criterion,
    per probe, the trials on each rewrite, by the id of the example rewritten. A recheck's canary
    probes nothing."""
    settings = ready.settings
    if settings is None or options.canary is not None:
        return {}
    tasks, rewritten = [], []
    for task in ready.tasks:
        c = task.criterion
        probes = probes_for(c.kind, c.probes, policy.for_criterion(c.id).max_probe_flip)
        if not probes:
            continue
        final = {t[0].example_id: majority(t).passed for t in verdicts[c.id]}
        by_id = {e.id: e for e in task.examples.examples}
        ids = probed(
            c.kind, [(e.id, e.label, final[e.id]) for e in by_id.values() if e.id in final]
        )
        pairs = [(p.name, by_id[rid]) for p in probes for rid in ids]
        variants = tuple(variant_of(e, PROBES[name]) for name, e in pairs)
        examples = CalibrationSet(c.id, task.examples.path, variants)
        tasks.append(live_task(c, examples, options, task.model))
        rewritten.append(pairs)
    if not tasks:
        return {}
    run = await judge_sets(tasks, replace(settings, stop_early=None), llm)
    out: dict[str, dict[str, list[list[Verdict]]]] = {}
    for task, pairs, trials in zip(tasks, rewritten, run.verdicts, strict=True):
        check_some_call_answered(task.criterion.id, task.model, trials)
        mine = out.setdefault(task.criterion.id, {})
        for (name, e), asked in zip(pairs, trials, strict=True):
            mine.setdefault(name, []).append([replace(v, example_id=e.id) for v in asked])
    return out


def dry_run(options: Options, llm: LLM | None = None) -> list[Estimate]:
    """What `measure(options)` would ask, per criterion, asking nothing and writing nothing: the
    calls to make, the answers cached, the prompt tokens, the cost at most
    (judgekit.judging.dry_run). The inputs are checked as `calibrate` checks them."""
    ready = _prepare(options, datetime.now(UTC))
    return estimate(ready.criteria, ready.tasks, ready.sources, ready.settings, llm)


@dataclass
class _Ready:
    """A calibration's inputs, read and checked: the verdicts known without a model (recorded, by
    code) and whose they are, and the criteria left to judge live, each with its model, and how."""

    criteria: list[Criterion]
    sets: dict[str, CalibrationSet]  # what is judged (a canary, for a re-check)
    chosen: dict[str, CalibrationSet]  # the sets (of the split) as calibrated
    known: dict[str, list[list[Verdict]]]
    sources: dict[str, str]
    tasks: list[Task]  # the criteria left to judge live, each judge's setup and examples
    settings: RunSettings | None
    verdicts_digest: str | None = None  # of the verdict file's bytes, when verdicts were recorded
    whole: dict[str, CalibrationSet] = field(default_factory=dict)  # the sets as read, unsplit


def _prepare(options: Options, started: datetime, unrecorded: str | None = None) -> _Ready:
    criteria, whole_sets = load_chosen(options)
    sets = chosen = select_split(whole_sets, options.split)
    if unrecorded is not None and (problems := unrecorded_looks(chosen, unrecorded)):
        raise InputError(problems)
    drawn = [cid for cid, s in sets.items() if any(e.selection for e in s.examples)]
    if options.stop_early and drawn:
        raise InputError.one(
            f"calibration_sets/{drawn[0]}",
            "selection",
            "early stopping counts examples alike, "
            "and this set holds examples drawn by the judge's verdict; "
            "calibrate without --stop-early",
        )
    policy = options.policy or Policy.load()
    selective = [cid for cid in sets if policy.for_criterion(cid).selective is not None]
    if options.stop_early and selective:
        raise InputError.one(
            "--stop-early",
            selective[0],
            "early stopping decides on TPR and TNR, and the policy judges this criterion "
            "selectively (a certified threshold, on the examples judged); calibrate without "
            "--stop-early",
        )
    for cid in drawn if not options.canary else ():  # before any judge is paid for
        check_drawn(sets[cid], whole_sets[cid])
    if options.canary:
        sets = {cid: s.canary(options.canary) for cid, s in sets.items()}
    criteria = [with_trials(c, options.trials) for c in criteria]
    trials_by_criterion: dict[str, list[list[Verdict]]] = {}
    sources: dict[str, str] = {}
    verdicts_digest = None
    if options.verdicts is not None:
        trials_by_criterion, sources, verdicts_digest = _recorded(
            options.verdicts, options, criteria, whole_sets, sets
        )
    for criterion in criteria:
        if isinstance(criterion, RegexCriterion) and criterion.id not in trials_by_criterion:
            at = started.timestamp()
            trials_by_criterion[criterion.id] = [
                [Verdict(e.id, *criterion.explain(e.fields()), obtained_at=at)]
                for e in sets[criterion.id].examples
            ]
            sources[criterion.id] = "code"

    pending = [c for c in criteria if isinstance(c, JUDGED) and c.id not in trials_by_criterion]
    tasks = [live_task(c, sets[c.id], options) for c in pending]
    settings = run_settings(options, [c.id for c in pending]) if pending else None
    return _Ready(
        criteria,
        sets,
        chosen,
        trials_by_criterion,
        sources,
        tasks,
        settings,
        verdicts_digest,
        whole_sets,
    )


def load_chosen(options: Options) -> tuple[list[Criterion], dict[str, CalibrationSet]]:
    """The chosen criteria and their whole sets; an InputError listing every problem of them and,
    beside those, of the verdict file."""
    check_endpoint(options.api_base)
    problems: list[Problem] = []
    try:
        criteria, whole_sets = load_inputs(
            options.criteria_dir, options.sets_dir, options.criterion_ids
        )
    except InputError as error:
        problems += error.problems
    # its own problems are listed beside the criteria's and sets'
    if options.verdicts is not None and problems:
        try:
            for _ in iter_recorded(options.verdicts):
                pass
        except InputError as error:
            problems += error.problems
    if problems:
        raise InputError(problems)
    return criteria, whole_sets


def _recorded(
    verdicts: Path,
    options: Options,
    criteria: list[Criterion],
    whole_sets: dict[str, CalibrationSet],
    sets: dict[str, CalibrationSet],
) -> tuple[dict[str, list[list[Verdict]]], dict[str, str], str | None]:
    """The verdicts the file records, by criterion (of the chosen split), whose they are, and the
    digest of its bytes; an InputError when it lacks an LLM criterion's or does not match."""
    # Match against the whole set (a verdict file covers every split), then keep the chosen split;
    # the records are read as they are matched, never held all at once, and the digest (into the
    # report and the history, beside the file's name) is of the bytes read.
    source = open_source(verdicts) if verdicts.is_file() else None
    first = (
        options.recorded_times.get(file_digest(verdicts) or "") if options.recorded_times else None
    )
    matched = match_file(
        verdicts,
        (r for _, r in iter_recorded(verdicts, source=source)),
        {c.id: whole_sets[c.id] for c in criteria},
        {c.id: c.no_claims for c in criteria if isinstance(c, ClaimsCriterion)},
        default_at=first,
    )
    recorded = [c for c in criteria if c.id in matched.trials]
    live = [
        Problem(
            str(verdicts),
            c.id,
            "has no verdicts for this LLM criterion; add them or choose criteria with --criterion",
        )
        for c in criteria
        if isinstance(c, JUDGED) and c not in recorded
    ]
    if live or matched.problems:
        raise InputError(live + matched.problems)
    trials_by_criterion: dict[str, list[list[Verdict]]] = {}
    for cid, trials in matched.trials.items():
        kept = {e.id for e in sets[cid].examples}
        trials_by_criterion[cid] = [t for t in trials if t[0].example_id in kept]
    sources = {
        c.id: matched.provenance(
            c, run_setup(c, Source("live"), options.model, options).mark, verdicts
        )
        for c in recorded
    }
    return trials_by_criterion, sources, source.digest if source is not None else None


def run_settings(options: Options, criterion_ids: Sequence[str]) -> RunSettings:
    """How the judges of these criteria are asked, as `options` say, under the project's policy."""
    # the project's policy: judgekit.yaml / pyproject.toml here
    policy = options.policy or Policy.load()
    ages = [policy.for_criterion(cid).max_age for cid in criterion_ids]
    given = [a for a in ages if a]
    return RunSettings(
        concurrency=options.concurrency,
        cache_dir=options.cache_dir,
        timeout_s=options.timeout_s,
        retry=options.retry,
        # Evidence older than the gate accepts is asked again rather than served from the cache;
        # with `refresh`, every answer is (any answer cached is older than none).
        max_age_s=0.0 if options.refresh else _max_age_s(given, ages),
        not_before=_not_before(options, criterion_ids),
        stop_early={cid: policy.for_criterion(cid) for cid in criterion_ids}
        if options.stop_early
        else None,
        seed=options.seed,
        stop_rule=options.stop_rule,
        selective=frozenset(cid for cid in criterion_ids if policy.for_criterion(cid).selective),
    )


def _max_age_s(given: list[str], ages: list[str | None]) -> float | None:
    """How old a cached answer may be: the policy's max_age, when every criterion has one."""
    limits = [parse_duration(a).total_seconds() for a in given] if len(given) == len(ages) else []
    return min(limits) if limits else None


def _not_before(options: Options, criterion_ids: Sequence[str]) -> float | None:
    """The time before which no cached answer is served: the latest recheck's finding that one
    of these judges changed, or the history's last lapse (one time for the run, so no judge
    found changed is served an answer from before its finding)."""
    found = [
        options.changed_at[cid] for cid in (*criterion_ids, UNSEALED) if cid in options.changed_at
    ]
    return max(found) if found else None


# (label, final verdict): six pairs, one tuple each, however many examples.
_OUTCOMES = {
    (label, passed): (label, passed) for label in (True, False) for passed in (True, False, None)
}


def run_setup(
    criterion: Criterion, source: Source, model: str | None, options: Options
) -> JudgeSetup:
    """The setup of a criterion's judge in this run: the one builder, with the run's settings."""
    return setup_of(
        criterion,
        model=model,
        api_base=options.api_base,
        via=options.via,
        structured=options.structured,
        source=source,
    )


def as_measured(
    options: Options, criterion: Criterion, measured: JudgeSetup | None
) -> tuple[Options, str | None]:
    """`options` asking the judge a report measured of `criterion` (its model, transport,
    structured answers and trials), when that is the criterion's judge now and this run asks the
    model and the endpoint it was measured with; else `options` as they are, and why: what
    probes or draws examples for a calibrated judge asks that judge, not the defaults. `measured`
    is read as the gate reads it (judgekit.gate.identity.measured_setups), never a report's
    fields taken as they stand."""
    if measured is None or measured.kind not in ("llm", "claims"):
        return options, "no calibration of its judge to follow: asked as the options say"
    if not isinstance(criterion, JUDGED):
        return options, "its criterion is checked by code"
    differs = measured.differences(setup_now(criterion, measured))
    if differs:
        return options, (
            "its judge changed since it was calibrated (" + "; ".join(differs) + "): asked as "
            "the criterion says now"
        )
    if options.model is not None and options.model != measured.model:
        return options, f"--model {options.model} is not the model measured ({measured.model})"
    model = options.model or measured.model
    asked = public_url(endpoint_for(criterion, options.api_base, model))
    if asked != measured.endpoint:

        def said(endpoint: str | None) -> str:
            return endpoint or "the provider's own"

        return options, (
            f"the endpoint asked now ({said(asked)}) is not the one measured "
            f"({said(measured.endpoint)}): name it with --api-base"
        )
    return replace(
        options,
        model=model,
        via=measured.via or "auto",
        structured=measured.structured is not False,
        trials=measured.trials,
    ), None


def live_task(
    criterion: LLMCriterion | ClaimsCriterion,
    examples: CalibrationSet,
    options: Options,
    model: str | None = None,
) -> Task:
    """The task of asking a criterion's judge live over `examples`, as `options` say: its model
    (`model`, else `model_for`), its setup (`run_setup`), the endpoint as asked."""
    model = model or model_for(criterion, options)
    setup = run_setup(criterion, LIVE, model, options)
    return task_of(criterion, examples, setup, options.api_base)


def calibration_of(  # noqa: PLR0913  what a calibration is made of, each named at the call
    criterion: Criterion,
    examples: CalibrationSet,
    trials: list[list[Verdict]],
    source: str,
    model: str | None,
    options: Options,
) -> Calibration:
    """A criterion's calibration: its judge's setup as this run asked it (`source` live) or as the
    verdicts were recorded (recorded and replayed verdicts carry the model only if the user named
    it, `--model` beside `--verdicts`; code has none)."""
    kind = Source.parse(source)
    asked = model if kind.kind == "live" else (options.model if kind.kind != "code" else None)
    return Calibration(
        criterion, examples, run_setup(criterion, kind, asked, options), kind, trials
    )


def criterion_report(  # noqa: PLR0913  the calibration, then what the report adds to it
    calibration: Calibration,
    options: Options,
    started: datetime,
    stop: Stop | None = None,
    gold: dict[str, Verdict] | None = None,
    selective: Selective | None = None,
    escalated: list[list[Verdict]] | None = None,
    probes: Mapping[str, list[list[Verdict]]] | None = None,
) -> CriterionReport:
    criterion, cal, all_trials = calibration.criterion, calibration.examples, calibration.trials
    setup, source = calibration.setup, str(calibration.source)
    full_set = cal
    # stopped early: metrics over the examples judged, the set as it is on disk
    if stop is not None:
        judged = {t[0].example_id for t in all_trials}
        cal = CalibrationSet(
            cal.criterion_id, cal.path, tuple(e for e in cal.examples if e.id in judged)
        )
    final = [majority(t) for t in all_trials]
    labels = [e.label for e in cal.examples]
    set_pass = sum(e.label for e in full_set.examples)  # the set's classes, judged or not
    # a canary (recheck) compares the same examples over time: counted plainly, as before
    result, design = agreement(
        cal, [v.passed for v in final], options.seed, plain=options.canary is not None
    )
    spec = judge_spec(criterion, setup.model)
    own = setup.digest
    judge = JudgeInfo(
        kind=spec["kind"],
        model=setup.model,
        parameters=spec["parameters"],
        declared_model=criterion.judge.model if isinstance(criterion, JUDGED) else None,
        prompt_sha=canonical_hash(spec.get("prompt") or spec.get("pattern")),
        source=source,
        api_base=setup.endpoint,
        via=setup.via or "auto",
        structured=setup.structured is not False,
        family=family(spec["model"]),
        setup=setup.to_json(),
    )
    disagreements = [
        Disagreement(
            id=e.id,
            label=e.label,
            verdict=v.passed,
            input=e.input,
            output=e.output,
            # source material from a shared file is shown once, by name (`contexts`): the
            # example's own, else the criterion's
            context=None if e.context_file or not e.context else e.context,
            context_file=e.context_file or (None if e.context else criterion.context_file),
            reason=v.reason,
            abstention=v.abstention,
            raw=v.raw,
            claims=recorded_claims(v),
        )
        for e, v in zip(cal.examples, final, strict=True)
        if v.passed != e.label
    ]
    if (
        not gold
        and isinstance(criterion, ClaimsCriterion)
        and Source.kind_of(source) in ("recorded", "replayed")
    ):
        gold = recorded_gold(cal.examples, final, criterion.no_claims)
    k = result.confusion
    times = [v.obtained_at for trials in all_trials for v in trials if v.obtained_at is not None]
    # a probe's verdicts are evidence too, as old as their answers (the gate counts them so)
    times += [
        v.obtained_at
        for judged in (probes or {}).values()
        for trials in judged
        for v in trials
        if v.obtained_at is not None
    ]
    # Verdicts another judge recorded are its; judgekit's own (live, by code, or read back) carry
    # its fingerprint.
    mark = setup.mark
    return CriterionReport(
        id=criterion.id,
        question=criterion.question,
        fingerprint=own,
        set_fingerprint=full_set.fingerprint,
        inputs={"criterion": criterion.digest, "set": full_set.digest}
        if criterion.digest and full_set.digest
        else None,
        n=result.n,
        abstained=result.abstained,
        confusion=ConfusionCounts(tp=k.tp, fp=k.fp, tn=k.tn, fn=k.fn),
        metrics={name: finite(value) for name, value in result.metrics.items()},
        intervals={name: (finite(lo), finite(hi)) for name, (lo, hi) in result.intervals.items()},
        # The labelled claims' verification calls were made for this report too: they count.
        disagreements=disagreements,
        judge=judge,
        usage=UsageSummary.of([*all_trials, *([v] for v in (gold or {}).values())]),
        consistency=consistency(all_trials),
        annotators=annotators(cal, final),
        slices=slices(cal, final),
        labelled_pass=set_pass,
        labelled_fail=len(full_set.examples) - set_pass,
        split=options.split,
        early_stop=EarlyStop(
            decision=stop.decision,
            judged=stop.judged,
            total=stop.total,
            looks=stop.looks,
            calls_saved=stop.calls_saved,
            seed=stop.seed,
            batch=stop.batch,
            rule=stop.rule,
        )
        if stop is not None
        else None,
        calibrated_at=started,
        evidence_at=datetime.fromtimestamp(min(times), UTC) if times else started,
        outcomes=ById(
            (e.id, _OUTCOMES[e.label, v.passed]) for e, v in zip(cal.examples, final, strict=True)
        ),
        held_out=named_by_identity(criterion, tests)
        if (tests := in_test_split(cal.examples))
        else None,
        copies={kept: list(ids) for kept, ids in full_set.copies.items()},
        labels_by=dict(Counter(e.made_by or ASSUMED for e in cal.examples)),
        confidences={
            e.id: v.confidence
            for e, v in zip(cal.examples, final, strict=True)
            if v.confidence is not None
        },
        claim_stages=claim_stages(cal, final, gold) if gold else None,
        selective=_certificate(
            criterion, labels, final, escalated, spec["model"], selective, source
        ),
        design=design,
        verdicts=VerdictLog.of(
            criterion.id, (all_trials, escalated or []), mark, started, probes=probes
        ),
        probes=probe_figures(
            criterion,
            [(e.id, e.label, v.passed) for e, v in zip(cal.examples, final, strict=True)],
            probes or {},
        ),
        warnings=[copies_said(full_set.copies)] if full_set.copies else [],
        contexts=_contexts(criterion, cal.examples, final),
    )


def _contexts(
    criterion: Criterion, examples: Sequence[Example], final: Sequence[Verdict]
) -> dict[str, str]:
    """The text of each context file a disagreement names, once: an example's own, or the
    criterion's for an example with no context of its own."""
    out: dict[str, str] = {}
    for e, v in zip(examples, final, strict=True):
        if v.passed == e.label:
            continue
        if e.context_file:
            out[e.context_file] = e.context or ""
        elif not e.context and criterion.context_file:
            out[criterion.context_file] = criterion.context_for(None) or ""
    return out


ASSUMED = "human (assumed)"  # a label the set does not say the making of


def copies_said(copies: Mapping[str, Sequence[str]]) -> str:
    """What the report says of a set's copies (judgekit.inputs.identity)."""
    n = sum(len(c) for c in copies.values())
    shown = "; ".join(f"{', '.join(c)} of {kept}" for kept, c in list(copies.items())[:5])
    more = f"; and {len(copies) - 5} more" if len(copies) > 5 else ""
    return (
        f"{n} examples of the set show the judge the same text as another and are counted once, "
        f"as the example they copy ({shown}{more})"
    )


def _certificate(
    criterion: Criterion,
    labels: list[bool],
    final: list[Verdict],
    escalated: list[list[Verdict]] | None,
    model: str | None,
    selective: Selective | None,
    source: str,
) -> Certificate | None:
    """A selective criterion's certificate: its judge's, then the one it escalates to, on the same
    examples."""
    if selective is None or isinstance(criterion, RegexCriterion):
        return None
    stages, models = [final], [model]
    if (
        escalated is not None
        and isinstance(criterion, LLMCriterion)
        and criterion.judge.escalate_to is not None
    ):
        by_id = {t[0].example_id: majority(t) for t in escalated}
        stages.append([by_id.get(v.example_id, Verdict(v.example_id, None)) for v in final])
        models.append(criterion.judge.escalate_to.model)
    return certificate_of(
        labels, stages, models, selective, confidence_source(criterion.judge.trials, source)
    )
