"""The gate: may suites that rely on a criterion's judge run? PASS, FAIL or INCONCLUSIVE, per
criterion and overall, from calibration reports alone (no model is called).

The gate fails closed, and decides from evidence, not from stored figures: every figure it uses is
recomputed from the report's per-example verdicts against the labels on disk
(judgekit.gate.evidence), and a report that disagrees with its verdicts blocks. A missing report, a
criterion without one (or with two), a stale one (its criterion file or set file is not the one
calibrated, the file names another model, or its oldest answer is older than `max_age`), times in
the future, too few labelled examples of either class, undefined metrics, too many abstentions or
flips all block. By default a threshold applies to the lower bound of the 95% interval: the
evidence must show the judge is good, not merely fail to show it is bad.

It reads plain files with plain code (no models built), so `judgekit gate` starts in a blink.

>>> Gate(Policy(defaults=Thresholds(min_examples=2, max_age=None))).check(None, ["c"]).status
'FAIL'
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgekit.errors import InputError
from judgekit.gate.copies import without_copies
from judgekit.gate.evidence import Figures, Probing, verify
from judgekit.gate.identity import check_marks, check_signature, judge_changed, recorded_setup
from judgekit.gate.label_budget import budgets
from judgekit.gate.result import Decision, GateResult
from judgekit.gate.rules import (
    Findings,
    bounds_of,
    check,
    judge_setting,
    label_sources,
    selective,
)
from judgekit.inputs.catalog import (
    CriterionFile,
    criterion_files,
    declared_kind,
    find_set,
    unknown_criteria,
)
from judgekit.inputs.files import read_yaml
from judgekit.inputs.label_reader import LabelledSet, read_labels
from judgekit.inputs.policy import Policy, Thresholds, parse_duration
from judgekit.judging.probes import probes_for
from judgekit.lazy import exports
from judgekit.llm.families import family, same_model
from judgekit.report.reading import (
    Line,
    ReportEntry,
    ReportFile,
    Untrusted,
    check_report,
    entries_of,
    parse_entry,
    read_pair,
    read_report,
)
from judgekit.report.render import fmt_number
from judgekit.signing import UNSEALED
from judgekit.stats.metrics import clopper_pearson

if TYPE_CHECKING:
    from judgekit.gate.pairwise import PairProject, decide_pairwise, pair_project
else:
    # Pairwise criteria are read through their models (pydantic): loaded when a project has one,
    # so the gate's light path starts without them.
    _pairwise = exports(
        "judgekit.gate.decision",
        {name: "judgekit.gate.pairwise" for name in ("decide_pairwise", "pair_project")},
    )[0]

    def decide_pairwise(*args: Any) -> Any:
        return _pairwise("decide_pairwise")(*args)

    def pair_project(*args: Any) -> Any:
        return _pairwise("pair_project")(*args)


class Gate:
    """Decides, from a report and the files on disk, whether each criterion's judge may grade.

    `criteria` and `sets` are what is on disk now (use `Gate.from_project`): a report about other
    files is stale, and its figures are recomputed against these labels. Without them nothing can
    be checked, and nothing passes.
    """

    def __init__(
        self,
        policy: Policy | None = None,
        criteria: dict[str, CriterionFile] | None = None,
        sets: dict[str, LabelledSet] | None = None,
        now: datetime | None = None,
        agent_model: str | None = None,
        findings: dict[str, dict[str, datetime]] | None = None,
    ):
        self.policy = policy or Policy()
        self.criteria = criteria or {}
        self.sets = sets or {}
        self.now = now or datetime.now(UTC)
        # What rechecks found (judgekit.watch.findings): per criterion and judge fingerprint, when
        # a recheck found that judge changed. Evidence of that judge older than the finding is not
        # evidence any more.
        self.findings = findings or {}
        # The model of the agent under test: a judge of the same model may not grade it.
        self.agent_model = agent_model or self.policy.agent_model
        # Pairwise criteria as on disk (judgekit.gate.pairwise), decided from the report's
        # `pairwise` entries.
        self.pairs: dict[str, PairProject] = {}

    @classmethod
    def from_project(
        cls,
        criteria_dir: Path = Path("criteria"),
        sets_dir: Path = Path("calibration_sets"),
        config: Path | None = None,
        criterion_ids: list[str] | None = None,
        root: Path = Path("."),
        agent_model: str | None = None,
        read: dict[str, LabelledSet] | None = None,
    ) -> Gate:
        """A gate from the files on disk.

        The policy is `config`, else judgekit.yaml / pyproject.toml in `root` (the project's root:
        the current folder for the CLI, pytest's rootdir for the plugin). `read` holds sets this
        process has just read and checked (a calibration's): they are not read again.
        """
        criteria = criterion_files(criteria_dir)
        problems = unknown_criteria(criterion_ids or (), criteria, criteria_dir)
        if problems:
            raise InputError(problems)
        read = read or {}
        pairwise = {
            cid: f for cid, f in criteria.items() if declared_kind(f.path, f.text) == "pairwise"
        }
        sets = {
            cid: read[cid] if cid in read else read_labels(find_set(sets_dir, cid), cid)
            for cid in criteria
            if cid not in pairwise
        }
        policy = Policy.load(config, root=root)
        policy.check_ids(set(criteria))
        gate = cls(policy, criteria, sets, agent_model=agent_model)
        gate.pairs = {cid: pair_project(f, sets_dir) for cid, f in pairwise.items()}
        return gate

    def with_findings(self, findings: dict[str, dict[str, datetime]]) -> Gate:
        """This gate, deciding also on what rechecks found (judgekit.watch.findings_of, read by the
        shells above the gate: the history is not the gate's to read)."""
        self.findings = findings
        return self

    def check(
        self,
        report: Any,
        criterion_ids: list[str] | None = None,
        report_path: str | Path | None = None,
    ) -> GateResult:
        """Decide each criterion of a report held in memory, or of None.

        The report is a judgekit.report.Report; its verdicts are the ones it holds, else
        verdicts.jsonl beside `report_path`. None is no report: every criterion FAILs.
        """
        entries = entries_of(report) if report is not None else None
        pairs = (
            [p.model_dump(mode="json") for p in getattr(report, "pairwise", [])]
            if report is not None
            else None
        )
        return self._decide_all(
            entries,
            criterion_ids,
            report_path,
            report.judgekit_version if report is not None else None,
            pairs=pairs,
        )

    def check_path(
        self, report_path: str | Path, criterion_ids: list[str] | None = None
    ) -> GateResult:
        """Decide from report.json at `report_path` (a file or its folder) and verdicts.jsonl
        beside it."""
        path = Path(report_path)
        path = path / "report.json" if path.is_dir() else path
        found = read_report(path)
        pairs: list[Any] | Untrusted | None = None
        if found is not None:
            pairs = found.data.get("pairwise", [])
            try:
                check_signature(found, self.policy.require_signed_evidence)
                if not isinstance(pairs, list):
                    raise Untrusted("its pairwise entries are not a list")
            except Untrusted as error:
                pairs = error
        return self._decide_all(
            [(data, None) for data in found.criteria] if found is not None else None,
            criterion_ids,
            path,
            found.judgekit_version if found is not None else None,
            found,
            pairs=pairs,
        )

    def _decide_all(
        self,
        entries: list[tuple[Any, tuple[Line, ...] | None]] | None,
        criterion_ids: list[str] | None,
        report_path: str | Path | None,
        written_by: str | None = None,
        found: ReportFile | None = None,
        pairs: list[Any] | Untrusted | None = None,
    ) -> GateResult:
        ids = (
            criterion_ids
            or sorted(self.criteria)
            or sorted(
                {
                    entry_id
                    for data, _ in entries or []
                    if isinstance(data, dict) and isinstance(entry_id := data.get("id"), str)
                }
            )
        )
        file_lines: list[Line] | Untrusted | None = None
        if entries and report_path is not None and any(lines is None for _, lines in entries):
            try:
                if found is not None:
                    check_report(found.data)
                    check_signature(found, self.policy.require_signed_evidence)
                file_lines = read_pair(
                    Path(report_path), found.verdicts_sha256 if found is not None else None
                )
            except Untrusted as error:
                file_lines = error
        decisions = []
        for cid in ids:
            if cid in self.pairs:
                decisions.append(self._decide_pair(cid, pairs))
                continue
            mine = [
                (data, lines)
                for data, lines in entries or []
                if isinstance(data, dict) and data.get("id") == cid
            ]
            if len(mine) > 1:
                decisions.append(
                    Decision(
                        cid,
                        "FAIL",
                        (
                            f"report.json holds {len(mine)} entries for this criterion, "
                            "where a report has one; run `judgekit calibrate` again",
                        ),
                    )
                )
                continue
            if not mine:
                decisions.append(
                    Decision(
                        cid,
                        "FAIL",
                        ("no calibration report for this criterion; run `judgekit calibrate`",),
                    )
                )
                continue
            data, held = mine[0]
            lines: list[Line] | Untrusted | None = (
                list(held)
                if held is not None
                else (
                    [line for line in file_lines if line.criterion in (cid, None)]
                    if isinstance(file_lines, list)
                    else file_lines
                )
            )
            decisions.append(self.decide(cid, data, lines, written_by))
        return GateResult(
            tuple(decisions),
            str(report_path) if report_path is not None else None,
            self.agent_model,
        )

    def _decide_pair(self, cid: str, pairs: list[Any] | Untrusted | None) -> Decision:
        if isinstance(pairs, Untrusted):
            return Decision(
                cid,
                "FAIL",
                (f"the report is not evidence: {pairs}; run `judgekit calibrate` again",),
            )
        found = [p for p in pairs or [] if isinstance(p, dict) and p.get("id") == cid]
        return decide_pairwise(
            self.pairs[cid], found, self.policy.for_criterion(cid), self.now, self.agent_model
        )

    def decide(
        self,
        criterion_id: str,
        data: Any,
        lines: list[Line] | Untrusted | None,
        written_by: str | None = None,
    ) -> Decision:
        """One criterion's decision.

        The entry read, fresh (the files calibrated are the files on disk, its evidence younger than
        max_age), its figures recomputed from `lines` (its verdicts) against the set on disk, then
        the thresholds; and its judge is not the agent's own model.
        """
        try:
            entry = parse_entry(data, judgekit_version=written_by)
        except Untrusted as error:
            return Decision(
                criterion_id,
                "FAIL",
                (f"the report is not evidence: {error}; run `judgekit calibrate` again",),
            )
        decision, figures = self._evidence(criterion_id, entry, lines)
        decision = replace(
            decision,
            model=entry.model,
            confusion=decision.confusion or (figures.counts() if figures else None),
            entry=entry,
        )
        if decision.status != "PASS":
            decision = replace(decision, thresholds=None)
        clash = self._agent_clash(entry)
        if clash:
            decision = replace(
                decision, status="FAIL", reasons=(clash, *decision.reasons), needed=None
            )
        return decision

    def _agent_clash(self, entry: ReportEntry) -> str | None:
        """Why this judge may not grade the agent declared (None when it may, or none is
        declared)."""
        if not self.agent_model or entry.kind == "regex":
            return None
        if not entry.model:
            return (
                "the report names no judge model, so nothing shows it is not the agent's "
                f"({self.agent_model}); calibrate with the judge's model named (--model)"
            )
        agent = family(self.agent_model)
        # the family from the model, not from report.json's word for it
        if same_model(entry.model, self.agent_model) or family(entry.model) == agent:
            return (
                f"the judge is the agent's own model: judge {entry.model} and agent "
                f"{self.agent_model} are both {agent}; calibrate a judge of another model"
            )
        return None

    def _found_changed(
        self, criterion_id: str, entry: ReportEntry, figures: Figures
    ) -> Decision | None:
        """A FAIL when a recheck found this judge changed after its evidence, or when the history's
        findings cannot say that none did (judgekit.watch.seal); None otherwise."""
        older = figures.evidence_at
        lapse = self.findings.get(UNSEALED, {}).get(UNSEALED)
        if lapse is not None and (older is None or older < lapse):
            return Decision(
                criterion_id,
                "FAIL",
                (
                    "the history's drift findings could not be verified under the evidence key "
                    f"({lapse:%Y-%m-%d %H:%M}: deleted or edited without the key, a history "
                    "missing or made anew, or one from before findings were sealed), and this "
                    "evidence is older than that; run `judgekit calibrate`, which asks every "
                    "answer from before then again",
                ),
            )
        found = self.findings.get(criterion_id, {}).get(entry.fingerprint)
        if found is not None and (older is None or older < found):
            return Decision(
                criterion_id,
                "FAIL",
                (
                    f"a recheck found this judge changed (DRIFT, {found:%Y-%m-%d %H:%M}) and "
                    "its evidence is older than that; run `judgekit calibrate`, which asks the "
                    "older answers again",
                ),
            )
        return None

    def _evidence(
        self, criterion_id: str, entry: ReportEntry, lines: list[Line] | Untrusted | None
    ) -> tuple[Decision, Figures | None]:
        t = self.policy.for_criterion(criterion_id)
        if entry.kind == "regex":  # checked by code: nothing to be unsure of, nothing to escalate
            t = replace(t, selective=None)
        stale = self._staleness(entry)
        if stale:
            return Decision(criterion_id, "FAIL", tuple(stale)), None
        try:
            labels = without_copies(
                self.sets[criterion_id],
                entry.copies,
                self.criteria[criterion_id],
                by_code=entry.kind == "regex" and not _reads_the_reply(self.criteria[criterion_id]),
            ).select(entry.split)
            if lines is None:
                raise Untrusted(
                    "the report has no per-example verdicts to check its figures against"
                )
            if isinstance(lines, Untrusted):
                raise lines
            setup = recorded_setup(entry)
            check_marks(lines, setup.mark)
            if entry.early_stop_judged is not None and (
                t.selective is not None or any(e.selection for e in labels.examples)
            ):
                # Early stopping decides on TPR and TNR counted alike: neither on a certified
                # threshold over the examples it judged, nor on examples weighted by design.
                raise Untrusted(
                    "it stopped early, but the criterion is judged selectively or its set holds "
                    "examples drawn by the judge's verdict, which early stopping does not decide "
                    "on"
                )
            probing = _probing(self.criteria[criterion_id], t)
            figures = verify(
                entry, lines, labels, self.now, t, probing, self.criteria[criterion_id]
            )
            if setup.kind in ("llm", "claims") and figures.trials != setup.trials:
                raise Untrusted(
                    f"its judge was asked {setup.trials} time(s) per example, but its verdicts "
                    f"hold {figures.trials}"
                )
        except Untrusted as error:
            return Decision(
                criterion_id,
                "FAIL",
                (f"the report is not evidence: {error}; run `judgekit calibrate` again",),
            ), None
        wrong_labels = label_sources(
            [e.made_by for e in labels.examples], t, setup.model if setup.kind != "regex" else None
        )
        if wrong_labels:
            return Decision(criterion_id, "FAIL", (wrong_labels,)), figures
        changed = self._found_changed(criterion_id, entry, figures)
        if changed is not None:
            return changed, figures
        if t.max_age is not None and figures.evidence_at is not None:
            age = self.now - figures.evidence_at
            if age > parse_duration(t.max_age):
                return Decision(
                    criterion_id,
                    "FAIL",
                    (
                        f"its evidence is {_age(age)} old (the oldest answer it rests on, cached "
                        f"or not), older than max_age {t.max_age}; run `judgekit calibrate` "
                        "again, which asks older answers again",
                    ),
                ), figures
        decision = self._thresholds(criterion_id, figures, t)
        return _with_probes(decision, figures, probing, t), figures

    def _thresholds(self, criterion_id: str, figures: Figures, t: Thresholds) -> Decision:
        if t.selective is not None:
            return selective(
                criterion_id, figures, t, t.selective, self.criteria[criterion_id].path
            )
        found = Findings()
        # classes whose count the gate lacks: pass (known-good) / fail (known-bad)
        short = _too_few(figures, t, found)
        _check_abstain_and_flips(figures, t, found)
        rates = figures.rates()
        short |= _check_rates(figures, rates, t, found)
        _check_pools(figures, t, found)
        needed = _labelling_needed(figures, rates, t, short, found)
        if found.fails:
            return Decision(criterion_id, "FAIL", tuple(found.fails + found.unsure))
        if found.unsure:
            return Decision(criterion_id, "INCONCLUSIVE", tuple(found.unsure), needed or None)
        return Decision(
            criterion_id,
            "PASS",
            (
                f"TPR {fmt_number(rates['tpr'], 2)}, TNR {fmt_number(rates['tnr'], 2)}, "
                f"kappa {fmt_number(rates['cohen_kappa'], 2)} on {figures.n} examples",
            ),
        )

    def _staleness(self, entry: ReportEntry) -> list[str]:
        """Why the report is not about the files on disk (empty when it is)."""
        reasons = []
        criterion = self.criteria.get(entry.id)
        if criterion is None or entry.id not in self.sets:
            reasons.append(
                f"no criteria/{entry.id}.yaml and calibration set on disk to check the report "
                "against"
            )
        elif entry.inputs is None:
            reasons.append(
                "the report does not say which files it calibrated (a report of an older judgekit)"
            )
        else:
            # A file that changed is read for the model it names now: the most useful reason when
            # it names another (judge_changed would name the model too, less plainly).
            edited = entry.inputs.get("criterion") != criterion.digest
            named = _named_model(criterion.path) if edited else None
            if named and named != entry.model:
                reasons.append(_model_reason(entry, named))
            elif changed := judge_changed(entry, criterion):
                reasons.append(changed)
            if entry.inputs.get("set") != self.sets[entry.id].digest:
                reasons.append("the calibration set changed since it was calibrated")
        if entry.declared_model and entry.declared_model != entry.model and not reasons:
            reasons.append(_model_reason(entry, entry.declared_model))
        if reasons:
            reasons.append("run `judgekit calibrate` again")
        return reasons


_OTHER_FIELD = re.compile(r"\bfield\s*:\s*[\"']?(input|context)\b")


def _reads_the_reply(criterion: CriterionFile) -> bool:
    """Whether a regex criterion reads the reply (its default field), by its text: a file that
    may name another field (a false alarm only costs the gate a whole read) does not."""
    return criterion.text is not None and not _OTHER_FIELD.search(criterion.text)


def _too_few(figures: Figures, t: Thresholds, found: Findings) -> set[str]:
    """The classes with fewer labelled examples than min_examples, each reply counted once (why,
    into `found`)."""
    n_pass, n_fail = figures.evidence()
    if n_pass >= t.min_examples and n_fail >= t.min_examples:
        return set()
    found.unsure.append(
        f"too few labelled examples: {n_pass} known-good and {n_fail} known-bad, at least "
        f"{t.min_examples} of each needed" + _repeats_words(figures)
    )
    return {cls for cls, n in (("pass", n_pass), ("fail", n_fail)) if n < t.min_examples}


def _repeats_words(figures: Figures) -> str:
    """What the counts leave out: drawn examples that repeat another's reply."""
    left = figures.labelled_pass + figures.labelled_fail - sum(figures.evidence())
    if not left:
        return ""
    return (
        f" ({left} drawn example{'s' if left > 1 else ''} show{'s' if left == 1 else ''} the "
        "judge a reply another example shows: one reply is one piece of evidence)"
    )


def _check_abstain_and_flips(figures: Figures, t: Thresholds, found: Findings) -> None:
    """The judge's abstentions and its trials' disagreements, against their maximum rates."""
    if figures.n and figures.abstained / figures.n > t.max_abstain_rate:
        found.fails.append(
            f"the judge abstained on {figures.abstained} of {figures.n} examples "
            f"({figures.abstained / figures.n:.0%} > {t.max_abstain_rate:.0%})"
        )
    if (
        t.max_flip_rate is not None
        and figures.flip_rate is not None
        and figures.flip_rate > t.max_flip_rate
    ):
        found.fails.append(
            f"trials disagreed on {figures.flip_rate:.0%} of examples (> {t.max_flip_rate:.0%})"
        )


def _probing(criterion: CriterionFile, t: Thresholds) -> Probing:
    """The probe verdicts the gate asks of a criterion, as its file on disk says (its kind and
    `probes:`, read plainly: judgekit.judging.probes.probes_for decides, as for `calibrate`);
    Untrusted when the file does not say which."""
    if t.max_probe_flip is None and (criterion.text is None or "probes" not in criterion.text):
        return Probing()  # the fast path: nothing asked (a file without the word lists none)
    try:
        data = read_yaml(criterion.path, criterion.text)
        data = data if isinstance(data, dict) else {}
        kind, named = data.get("kind", "llm"), data.get("probes") or []
        if not isinstance(kind, str) or not (
            isinstance(named, list) and all(isinstance(n, str) for n in named)
        ):
            raise InputError.one(criterion.path, "probes", "not a list of probe names")
        names = tuple(p.name for p in probes_for(kind, named, t.max_probe_flip))
    except InputError as error:
        raise Untrusted(
            f"criteria/{criterion.id}.yaml does not read: {error.problems[0]}"
        ) from None
    return Probing(names, kind)


def _with_probes(decision: Decision, figures: Figures, probing: Probing, t: Thresholds) -> Decision:
    """The decision with the probes' verdict on top, when the policy gates them (max_probe_flip):
    each probe asked for, in each direction, PASSes when the upper bound of its flip rate's exact
    95% interval is under max_probe_flip, FAILs when the lower bound is at or over it, and is
    INCONCLUSIVE between; the worst of them and the rest decides (a decision that FAILs on other
    grounds says the probes' findings beside its own)."""
    limit = t.max_probe_flip
    if limit is None:
        return decision
    fails, unsure = [], []
    for count in (c for c in figures.probes if c.probe in probing.required):
        if not count.tried:
            replies = "known-bad" if count.toward == "PASS" else "known-good"
            unsure.append(
                f"probe {count.probe} tried nothing towards {count.toward}: the judge got no "
                f"{replies} reply right"
            )
            continue
        low, high = clopper_pearson(count.flipped, count.tried)
        said = (
            f"probe {count.probe} bought {count.flipped} of {count.tried} verdicts towards "
            f"{count.toward} (95% interval {low:.2f}-{high:.2f})"
        )
        if high < limit:
            continue
        if low >= limit:
            fails.append(f"{said}, at or over max_probe_flip {limit:g}")
        else:
            unsure.append(f"{said}, which holds max_probe_flip {limit:g}")
    if decision.status == "FAIL":  # failed already: the probes' findings are said beside
        return replace(decision, reasons=(*decision.reasons, *fails, *unsure))
    if fails:
        return replace(decision, status="FAIL", reasons=(*fails, *unsure), needed=None)
    if unsure:
        reasons = (*decision.reasons, *unsure) if decision.status != "PASS" else tuple(unsure)
        return replace(decision, status="INCONCLUSIVE", reasons=reasons)
    return decision


def _check_rates(
    figures: Figures, rates: dict[str, float], t: Thresholds, found: Findings
) -> set[str]:
    """TPR, TNR (and kappa when asked) against their thresholds; the classes more examples of
    could settle."""
    intervals = figures.intervals(t.min_kappa is not None, figures.confidence)
    short: set[str] = set()
    for key, label, threshold, cls in (
        ("tpr", "TPR", t.min_tpr, "pass"),
        ("tnr", "TNR", t.min_tnr, "fail"),
    ):
        if check(rates, intervals, key, label, threshold, found, bounds_of(t, figures.confidence)):
            short.add(cls)
    if t.min_kappa is not None:
        check(rates, intervals, "cohen_kappa", "kappa", t.min_kappa, found, bounds_of(t))
    return short


def _check_pools(figures: Figures, t: Thresholds, found: Findings) -> None:
    """Each pool drawn from production, on its own: it is cleared there too."""
    for pool, (calibration, abstaining, _) in figures.pools().items():
        if abstaining > t.max_abstain_rate:
            found.fails.append(
                f"the judge abstains on {abstaining:.0%} of pool {pool} (weighted; > "
                f"{t.max_abstain_rate:.0%})"
            )
        for key, label, threshold, word in (
            ("tpr", "TPR", t.min_tpr, "known-good"),
            ("tnr", "TNR", t.min_tnr, "known-bad"),
        ):
            name = f"{label} on pool {pool} alone"
            if math.isnan(calibration.metrics[key]):
                found.unsure.append(
                    f"{name} is unknown: no {word} reply of it is labelled yet; draw more "
                    "(judgekit label --next)"
                )
            else:
                check(
                    calibration.metrics,
                    calibration.intervals,
                    key,
                    name,
                    threshold,
                    found,
                    bounds_of(t),
                )


def _labelling_needed(
    figures: Figures, rates: dict[str, float], t: Thresholds, short: set[str], found: Findings
) -> dict[str, int]:
    """How many more examples of each short class labelling needs (what it can do, into `found`).

    One number per class: the gate and `judgekit plan` say it alike.
    """
    needed: dict[str, int] = {}
    counts = figures.evidence()
    for cls, b in zip(
        ("pass", "fail"),
        budgets(t, counts, (_finite(rates["tpr"]), _finite(rates["tnr"]))),
        strict=True,
    ):
        if cls in short:
            found.unsure.append(b.words())
            if b.more:
                needed[cls] = b.more
    return needed


def _model_reason(entry: ReportEntry, named: str) -> str:
    calibrated = (
        repr(entry.model) if entry.model else "no named model (recorded verdicts without --model)"
    )
    return (
        f"the report calibrated {calibrated} but criteria/{entry.id}.yaml names judge.model "
        f"{named!r}; set judge.model to the model you calibrated, or calibrate again with the "
        "criterion's judge.model"
    )


def _named_model(path: Path) -> str | None:
    """The judge.model a criterion file names."""
    return judge_setting(path, "model")


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _age(age: timedelta) -> str:
    return f"{age.days} days" if age.days >= 1 else f"{age.total_seconds() / 3600:.1f} hours"
