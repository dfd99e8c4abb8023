"""`judgekit recheck`: the cheap daily check for a silent model update. A small frozen subset of
each LLM or claims criterion's set is asked again, without the cache, of exactly the judge its
last calibration measured — its model, endpoint, trials, transport and structured-output setting
come from that run, never from today's YAML — and compared with that calibration
(judgekit.watch.drift).

A re-check that asked anything else would not be a re-check: a criterion whose file changed since
(prompt or parameters), a baseline from another tool's recorded verdicts, or a `--model` /
`--api-base` (or a criterion's `judge.api_base`) other than the calibrated one are refused before
any call. The calibrated endpoint is known by its public form; the criterion's own `judge.api_base`
(or `--api-base`, or the environment's OPENAI_BASE_URL) brings its credentials back, and one of them
must name it: an endpoint read from the history alone (which an imported or shared history could
hold) is never asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import unknown_criteria
from judgekit.inputs.criteria import JUDGED, Criterion, load_criteria
from judgekit.inputs.project import load_inputs
from judgekit.inputs.sets import CalibrationSet
from judgekit.inputs.settings import DriftPolicy
from judgekit.judging.jobs import endpoint_named
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.llm.transports import check_endpoint
from judgekit.pipeline import Options, measure
from judgekit.secrets import public_url
from judgekit.signing import evidence_key
from judgekit.watch.canary import canary_size, canary_words
from judgekit.watch.drift import Drift, compare
from judgekit.watch.history import History, HistoryRun, Kept


def baseline(
    db: History, criterion: Criterion, on_disk: CalibrationSet, split: str | None
) -> tuple[Kept, JudgeSetup]:
    """The last calibration of `criterion` on its set as it is now (`on_disk`, narrowed to
    `split`), of judgekit's own judge, with the criterion's file unchanged since, as the history
    keeps it (under an evidence key, signed: read once, what the recheck compares); and the judge
    it measured."""
    runs = [r for r in db.runs(criterion.id, purpose="calibrate") if r.split == split]
    where = f"{db.path}"
    found = next((r for r in reversed(runs) if on_disk.fingerprint == r.set_fingerprint), None)
    if found is None:
        raise InputError.one(
            where,
            criterion.id,
            "no calibration on this calibration set as it is now"
            + (f" (split {split})" if split else "")
            + " to re-check against; run "
            f"`judgekit calibrate{' --split ' + split if split else ''}` first",
        )
    if Source.kind_of(found.source) == "recorded":
        raise InputError.one(
            where,
            criterion.id,
            f"its last calibration (run {found.id}) is from recorded "
            "verdicts of another judge; recheck re-asks judgekit's own judge: "
            "calibrate it live first",
        )
    key = evidence_key()
    kept = db.kept(found.id, key)
    if kept is None:
        # a baseline edited to match what the judge says now would hide any drift
        raise InputError.one(
            where,
            criterion.id,
            f"its last calibration (run {found.id}) is not signed under the evidence key (kept "
            "without the key, or changed since): recheck compares with what it can trust; "
            "calibrate it under the key first",
        )
    found = kept.run
    measured = found.measured(criterion)
    if measured is None:
        raise InputError.one(
            where,
            criterion.id,
            f"criteria/{criterion.id}.yaml, or the history's record of its last calibration "
            f"(run {found.id}), changed since that calibration: they do not define the judge it "
            "measured (its prompt, model, endpoint or parameters); recheck re-asks the calibrated "
            "judge, so calibrate the criterion as it is now first",
        )
    return kept, measured


def recheck(  # noqa: PLR0913  `judgekit recheck` (cli/watch.py) passes these by position
    db: History,
    criteria_dir: Path,
    sets_dir: Path,
    criterion_ids: Sequence[str],
    size: int | None,
    policy: DriftPolicy,
    split: str | None = None,
    model: str | None = None,
    endpoint: str | None = None,
    timeout_s: float = 60.0,
    notes: list[str] | None = None,
) -> list[Drift]:
    """Re-ask each criterion's canary of its calibrated judge, record the runs, and compare each
    with its baseline. Every baseline is found, and every refusal made, before anything is asked.
    With no `size`, each canary is as large as finding a drop of DROP in TPR or TNR POWER of the
    time needs at its calibrated rates (judgekit.watch.canary); `notes` gets what each can see."""
    check_endpoint(endpoint)
    judged = {c.id: c for c in load_criteria(criteria_dir) if isinstance(c, JUDGED)}
    ids = list(criterion_ids or judged)
    if not ids or unknown_criteria(ids, judged, criteria_dir):
        raise InputError.one(
            criteria_dir,
            ", ".join(cid for cid in ids if cid not in judged),
            "recheck re-asks LLM and claims criteria; there is none of that name here",
        )
    _, on_disk = load_inputs(criteria_dir, sets_dir, ids, split)
    baselines = {cid: baseline(db, judged[cid], on_disk[cid], split) for cid in ids}
    problems = []
    endpoints: dict[str, str | None] = {}
    for cid, (kept, setup) in baselines.items():
        run = kept.run
        problem = _asked_elsewhere(judged[cid], run, setup, model, endpoint, criteria_dir)
        if problem is not None:
            problems.append(problem)
        elif endpoint is None:
            endpoints[cid] = _named(judged[cid], run, setup, criteria_dir, problems)
    if problems:
        raise InputError(problems)
    key = evidence_key()
    if key is not None:  # its findings sealed under the key (a lapse now if they were not)
        db.vouch(key)
    drifts = []
    for cid, (kept, setup) in baselines.items():
        run = kept.run
        rates = (run.metrics.get("tpr"), run.metrics.get("tnr"))
        alpha, flips = policy.alpha, policy.max_run_flip_rate
        chosen = min(
            size if size is not None else canary_size(*rates, alpha, flips),
            len(on_disk[cid].examples),
        )
        if notes is not None:
            notes.append(f"{cid}: {canary_words(chosen, *rates, alpha, flips)}")
        # The judge measured, asked again: its model, trials, transport and structured answers
        # from its setup, its endpoint the one named now (with its credentials).
        fresh = measure(
            Options(
                criteria_dir=criteria_dir,
                sets_dir=sets_dir,
                criterion_ids=[cid],
                model=setup.model,
                api_base=endpoint or endpoints[cid],
                trials=setup.trials,
                via=setup.via or "auto",
                structured=setup.structured is not False,
                cache_dir=None,
                timeout_s=timeout_s,
                canary=chosen,
                split=split,
            )
        )
        (after,) = db.record(fresh, purpose="recheck")
        now = db.kept(after, key)  # as recorded (under a key: signed, read back at once)
        if now is None:
            raise InputError.one(
                str(db.path),
                cid,
                f"did not keep the recheck's run {after} as it was recorded; move this history "
                "away and let judgekit start a new one",
            )
        # what the baseline was read as when it was checked, not read again after the asking
        found = compare(
            run,
            now.run,
            kept.outcomes,
            now.outcomes,
            policy,
            before_confidence=kept.confidences,
            after_confidence=now.confidences,
        )
        if found.status == "DRIFT":  # the gate and the next calibrate know the judge changed
            db.found_drift(after)
        drifts.append(found)
    return drifts


def _asked_elsewhere(  # noqa: PLR0913  the criterion, its baseline, and what the run names
    criterion: Criterion,
    run: HistoryRun,
    setup: JudgeSetup,
    model: str | None,
    endpoint: str | None,
    criteria_dir: Path,
) -> Problem | None:
    """Why recheck would not ask the judge `setup` measured (None when it would): `--model` or
    `--api-base` name another, or the criterion names another endpoint now."""
    cid, measured = criterion.id, setup.endpoint
    if model is not None and model != setup.model:
        return Problem(
            "--model",
            cid,
            f"{model!r} is not the calibrated judge ({setup.model!r}); recheck "
            "re-asks what was calibrated: leave --model out, or calibrate the new model",
        )
    if endpoint is not None and public_url(endpoint) != measured:
        return Problem(
            "--api-base",
            cid,
            f"{public_url(endpoint)!r} is not the calibrated endpoint "
            f"({measured!r}); give it only to add its credentials",
        )
    own = public_url(criterion.judge.api_base) if isinstance(criterion, JUDGED) else None
    if endpoint is None and own is not None and own != measured:
        return Problem(
            f"{criteria_dir / cid}.yaml",
            "judge.api_base",
            f"{own!r} is not the calibrated "
            f"endpoint ({measured!r}); recheck re-asks what was calibrated: calibrate "
            "the criterion again",
        )
    return None


def _named(
    criterion: Criterion,
    run: HistoryRun,
    setup: JudgeSetup,
    criteria_dir: Path,
    problems: list[Problem],
) -> str | None:
    """The measured endpoint as the criterion or the environment names it now (with their
    credentials). The history is data, not settings: an endpoint read from it (an imported run, a
    shared database) is never sent the provider's key or the canary unless the user names it
    now; when nothing does, a problem is added."""
    if not isinstance(criterion, JUDGED):
        return None
    try:
        return endpoint_named(criterion, setup.endpoint, setup.model or "")
    except InputError:
        problems.append(
            Problem(
                "--api-base",
                criterion.id,
                f"its calibration (run {run.id}) asked {setup.endpoint!r}, "
                f"which neither --api-base, {criteria_dir / criterion.id}.yaml's judge.api_base "
                "nor OPENAI_BASE_URL names; recheck asks only an endpoint you name: pass "
                "--api-base with it",
            )
        )
        return None
