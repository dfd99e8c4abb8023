"""Calibration history: every run of every criterion, with its verdicts, and every look at a
test split, in a SQLite file or a PostgreSQL database (judgekit.watch.store).

The schema grows by migrations (judgekit.watch.schema). Several processes may share one history
(SQLite: WAL journal, a busy timeout; both: one write transaction per run), so parallel CI jobs
and xdist workers lose nothing.

>>> import tempfile, pathlib
>>> with History.open(pathlib.Path(tempfile.mkdtemp()) / "history.sqlite") as history:
...     history.runs()
[]
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from judgekit.errors import InputError
from judgekit.gate.evidence import CLOCK_SKEW
from judgekit.inputs.criteria import JUDGED, Criterion, with_trials
from judgekit.inputs.heldout import TestSplit
from judgekit.judging.build_setup import setup_of
from judgekit.judging.pairwise import PairVerdict, position_of
from judgekit.judging.setup import JudgeSetup
from judgekit.report.model import CriterionReport, Report
from judgekit.report.pairwise import PairwiseReport
from judgekit.signing import evidence_key, genuine, tag
from judgekit.version import version
from judgekit.watch.alpha_budget import Budget, Look, next_look
from judgekit.watch.schema import identify, migrate
from judgekit.watch.seal import read_seal, vouch, write_seal
from judgekit.watch.store import DEFAULT_PATH, SQLITE, Store

PURPOSES = ("calibrate", "recheck")
ALPHA = 0.05  # the test split's alpha budget a look spends from when no command says otherwise
BUSY_TIMEOUT_S = (
    60.0  # how long to wait for another process's write before calling the history locked
)


class LabelChange(NamedTuple):
    """A label changed in review: which example, from what, to what, by whom, when, and how it
    was made (judgekit.inputs.sets.Example.made_by; None for a change recorded before the
    history kept it: not assumed)."""

    example: str
    old: bool | None
    new: bool
    annotator: str | None
    at: datetime
    made_by: str | None


@dataclass(frozen=True)
class HistoryRun:
    """One calibration (or re-check) of one criterion, as the history keeps it."""

    id: int
    criterion: str
    created_at: datetime
    purpose: str
    fingerprint: str
    model: str | None
    prompt_sha: str | None
    parameters: dict[str, Any]
    set_fingerprint: str
    split: str | None
    source: str
    n: int
    abstained: int
    metrics: dict[str, float | None]
    api_base: str | None = None  # the endpoint asked, without credentials
    via: str | None = None
    structured: bool | None = None
    verdicts_sha: str | None = None  # a recorded run's verdict file, by the digest of its bytes
    threshold: float | None = None  # selective judging: the judge's certified confidence threshold
    kind: str | None = None  # "pairwise" for a pairwise criterion's run; None: a yes/no one

    def measured(self, criterion: Criterion) -> JudgeSetup | None:
        """The judge this run measured, as one setup: the history keeps its fields as columns and
        its digest as the fingerprint, so it is rebuilt from `criterion` (what the judge is sent)
        and the columns (how it was asked), and is this run's only when its digest is the
        fingerprint. None when it is not: the criterion changed since, or the run was edited."""
        if not isinstance(criterion, JUDGED):
            return None
        setup = setup_of(
            with_trials(criterion, self.parameters.get("trials")),
            model=self.model,
            api_base=self.api_base,
            via=self.via or "auto",
            structured=True if self.structured is None else self.structured,
        )
        return setup if setup.digest == self.fingerprint else None

    def parts(self) -> dict[str, Any]:
        """What defines the judge and what it was measured on, by name (for telling changes
        apart)."""
        return {
            "model": self.model,
            "prompt": self.prompt_sha,
            "parameters": self.parameters,
            "set": self.set_fingerprint,
            "verdicts": self.verdicts_sha,
        }


def _aware(at: datetime) -> datetime:
    """A time with its offset (a time written without one is UTC)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


Returned = TypeVar("Returned")


def _refusing_database_errors(method: Callable[..., Returned]) -> Callable[..., Returned]:
    """A History method whose database errors become InputErrors that say what to do."""

    @functools.wraps(method)
    def checked(self: History, *args: Any, **kwargs: Any) -> Returned:
        try:
            return method(self, *args, **kwargs)
        except self.db.errors as error:
            raise self.db.refusal(error) from None

    return checked


PROBE_KEY = "probe:"  # a run's probe counts, kept beside its metrics: probe:<name>:<toward>:<count>
PAIR_TOWARD = "off-label"  # where a pairwise probe pushes a pair's verdict


def probe_metrics(c: CriterionReport) -> dict[str, float]:
    """A criterion's robustness probes as the history keeps them, beside its metrics: the verdicts
    each probe bought and the replies it tried, per direction (judgekit.judging.probes)."""
    out: dict[str, float] = {}
    for r in c.probes:
        out[f"{PROBE_KEY}{r.probe}:{r.toward}:flipped"] = r.flipped
        out[f"{PROBE_KEY}{r.probe}:{r.toward}:tried"] = r.tried
    return out


def probe_counts(metrics: Mapping[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    """A run's probe counts, read back from its metrics: (probe, toward) -> (flipped, tried)."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for key, value in metrics.items():
        if key.startswith(PROBE_KEY) and key.endswith(":tried"):
            name, toward = key[len(PROBE_KEY) : -len(":tried")].rsplit(":", 1)
            flipped = metrics.get(f"{PROBE_KEY}{name}:{toward}:flipped")
            if isinstance(value, (int, float)) and isinstance(flipped, (int, float)):
                out[name, toward] = (int(flipped), int(value))
    return out


class Kept(NamedTuple):
    """A run as the history keeps it, read at once: its fields, outcomes and confidences."""

    run: HistoryRun
    outcomes: dict[str, tuple[bool, bool | None]]
    confidences: dict[str, float]


# A run's columns its signature covers (all that a recheck or a drift comparison reads of it).
_SIGNED = (
    "uid",
    "criterion",
    "created_at",
    "fingerprint",
    "model",
    "prompt_sha",
    "parameters",
    "set_fingerprint",
    "source",
    "n",
    "abstained",
    "metrics",
    "split",
    "purpose",
    "api_base",
    "via",
    "structured",
    "threshold",
)


def _run_parts(row: Mapping[str, Any], verdicts: list[tuple[Any, ...]]) -> tuple[str, str, str]:
    return (
        "judgekit run",
        json.dumps([row[name] for name in _SIGNED], default=str),
        json.dumps(verdicts, default=str),
    )


def _run_mac(key: bytes, row: Mapping[str, Any], verdicts: list[tuple[Any, ...]]) -> str:
    return tag(key, *_run_parts(row, verdicts))


class History:
    """The history database: `record` a report's criteria, read back `runs` and their `outcomes`."""

    def __init__(self, db: Store) -> None:
        self.db, self.path = db, db.name  # path: where the history is, as it may be shown

    @classmethod
    def open(
        cls,
        location: Path | str = DEFAULT_PATH,
        create: bool = True,
        timeout_s: float = BUSY_TIMEOUT_S,
    ) -> History:
        """Open (creating and migrating as needed) the history at `location`, a SQLite path or a
        postgresql:// URL, waiting up to `timeout_s` for another process's write to finish."""
        history = cls(Store.open(location, create, timeout_s))
        try:
            if not create:
                history._must_exist()
            history._prepare()
        except BaseException:
            history.close()
            raise
        return history

    @_refusing_database_errors
    def _must_exist(self) -> None:
        """For a reader: a reader never writes a schema into an empty file, and another
        application's database is named as such (`identify`)."""
        _, mine = identify(self.db)
        if not mine:
            raise InputError.one(
                self.path,
                "",
                "no calibration history here yet; run `judgekit calibrate` "
                "first, or pass --history with the right database",
            )

    @_refusing_database_errors
    def _prepare(self) -> None:
        if self.db.dialect is SQLITE:
            self.db.execute("PRAGMA foreign_keys=ON")
        # first: a database that is not judgekit's is refused before anything changes
        migrate(self.db)
        if self.db.dialect is SQLITE:
            self.db.execute("PRAGMA journal_mode=WAL")

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @_refusing_database_errors
    def record(self, report: Report, purpose: str = "calibrate") -> list[int]:
        """Keep every criterion of a fresh report (with its verdicts), in one transaction."""
        if purpose not in PURPOSES:
            raise ValueError(f"purpose {purpose!r}; use one of {PURPOSES}")
        ahead = datetime.now(UTC) + CLOCK_SKEW
        dated = [(c.id, c.calibrated_at) for c in report.criteria]
        for cid, at in [*dated, *((p.id, p.calibrated_at) for p in report.pairwise)]:
            if at is not None and _aware(at) > ahead:
                raise InputError.one(
                    str(self.path),
                    cid,
                    f"its calibration is dated {at:%Y-%m-%d %H:%M}, in the future by "
                    "this machine's clock; a history keeps no run from the future (check the "
                    "clock)",
                )
        ids = []
        with self.db.transaction():
            for c in report.criteria:
                ids.append(self._insert(c, purpose))
            for p in report.pairwise:
                ids.append(self._insert_pair(p, purpose))
        return ids

    def _insert_pair(self, p: PairwiseReport, purpose: str) -> int:
        """A pairwise criterion's run: its judge and figures as a run, each pair's label and two
        answers in `pair_verdicts`."""
        f, setup = p.figures, p.setup
        metrics: dict[str, Any] = {
            name: f.get(name)
            for name in ("accuracy", "consistency", "first_decided", "second_decided")
        }
        for probe in p.probes:  # as a yes/no run's (probe_metrics): drift tests them alike
            metrics[f"{PROBE_KEY}{probe.probe}:{PAIR_TOWARD}:flipped"] = probe.flipped
            metrics[f"{PROBE_KEY}{probe.probe}:{PAIR_TOWARD}:tried"] = probe.tried
        run_id = self.db.insert(
            "INSERT INTO runs (criterion, created_at, fingerprint, model, prompt_sha, parameters, "
            "set_fingerprint, source, n, abstained, metrics, judgekit_version, split, purpose, "
            "api_base, via, structured, verdicts_sha, threshold, uid, kind) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                p.id,
                (p.calibrated_at or datetime.now(UTC)).isoformat(),
                p.fingerprint,
                p.model,
                setup.get("prompt"),
                json.dumps({**setup.get("sampling", {}), "orders": p.orders}, sort_keys=True),
                p.inputs.get("set", ""),
                p.source,
                f["n"],
                f["n"] - f["decided"],
                json.dumps(metrics, sort_keys=True),
                version(),
                p.split,
                purpose,
                setup.get("endpoint"),
                setup.get("via"),
                None if setup.get("structured") is None else int(setup["structured"]),
                p.inputs.get("verdicts"),
                None,
                uuid.uuid4().hex,
                "pairwise",
            ),
        )
        self.db.executemany(
            "INSERT INTO pair_verdicts (run_id, example_id, label, a_first, b_first) "
            "VALUES (?,?,?,?,?)",
            ((run_id, v.id, v.label or "", v.a_first, v.b_first) for v in p.verdicts),
        )
        return run_id

    @_refusing_database_errors
    def pair_outcomes(self, run_id: int) -> dict[str, tuple[str, str | None, bool | None]]:
        """A pairwise run's pairs: each one's label, the verdict (None: no verdict, as its
        criterion counted an inconsistent pair then), and whether its two orders agreed (None:
        an answer is missing). A run whose counting the history cannot read is an InputError."""
        run = self.run(run_id)
        counted, orders = run.parameters.get("inconsistent"), run.parameters.get("orders")
        if counted not in ("abstain", "tie") or orders not in (1, 2) or isinstance(orders, bool):
            raise InputError.one(
                str(self.path),
                f"run {run_id}",
                "is a pairwise run whose parameters do not say how it counted its pairs "
                f"(inconsistent {counted!r}, orders {orders!r}); it was written or imported "
                "edited: remove it, or compare other runs (--before, --after)",
            )
        rows = self.db.execute(
            "SELECT example_id, label, a_first, b_first FROM pair_verdicts WHERE run_id = ?",
            (run_id,),
        )
        out: dict[str, tuple[str, str | None, bool | None]] = {}
        for rid, label, a, b in rows:
            v = PairVerdict(rid, position_of("a_first", a), position_of("b_first", b))
            agreed = None if v.outcome == "abstained" else v.outcome != "inconsistent"
            out[rid] = (label, v.winner(str(counted), int(orders)), agreed if orders == 2 else None)
        return out

    def _insert(self, c: CriterionReport, purpose: str) -> int:
        judge = c.judge
        created = (c.calibrated_at or datetime.now(UTC)).isoformat()
        run_id = self.db.insert(
            "INSERT INTO runs (criterion, created_at, fingerprint, model, prompt_sha, parameters, "
            "set_fingerprint, "
            "source, n, abstained, metrics, judgekit_version, split, purpose, api_base, via, "
            "structured, verdicts_sha, "
            "threshold, uid) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                c.id,
                created,
                c.fingerprint,
                judge.model if judge else None,
                judge.prompt_sha if judge else None,
                json.dumps(judge.parameters if judge else {}, sort_keys=True),
                c.set_fingerprint,
                judge.source if judge else "live",
                c.n,
                c.abstained,
                json.dumps({**c.metrics, **probe_metrics(c)}, sort_keys=True),
                version(),
                c.split,
                purpose,
                judge.api_base if judge else None,
                judge.via if judge else None,
                None if judge is None else int(judge.structured),
                (c.inputs or {}).get("verdicts"),
                c.selective.stages[0].threshold if c.selective and c.selective.stages else None,
                uuid.uuid4().hex,
            ),
        )
        verdicts = [
            (
                example_id,
                int(label),
                None if passed is None else int(passed),
                c.confidences.get(example_id),
            )
            for example_id, (label, passed) in c.outcomes.items()
        ]
        self.db.executemany(
            "INSERT INTO verdicts (run_id, example_id, label, passed, confidence) "
            "VALUES (?,?,?,?,?)",
            ((run_id, *v) for v in verdicts),
        )
        key = evidence_key()
        if key is not None:  # signed as meant, then held to what the history kept
            row = dict(zip(_SIGNED, self._signed_row(run_id), strict=True))
            meant = sorted(verdicts)
            if self._signed_verdicts(run_id) != meant or any(
                row[name] != value for name, value in (("criterion", c.id), ("created_at", created))
            ):
                raise InputError.one(
                    str(self.path),
                    c.id,
                    "did not keep the run judgekit just wrote (its rows rewritten or dropped "
                    "behind its back); move this history away and let judgekit start a new one",
                )
            self.db.execute(
                "UPDATE runs SET mac = ? WHERE id = ?", (_run_mac(key, row, meant), run_id)
            )
        return run_id

    def _signed_row(self, run_id: int) -> tuple[Any, ...]:
        found = self.db.execute(
            f"SELECT {', '.join(_SIGNED)} FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        return tuple(found) if found is not None else (None,) * len(_SIGNED)

    def _signed_verdicts(self, run_id: int) -> list[tuple[Any, ...]]:
        rows = self.db.execute(
            "SELECT example_id, label, passed, confidence FROM verdicts WHERE run_id = ?",
            (run_id,),
        ).fetchall()
        return sorted(tuple(r) for r in rows)

    @_refusing_database_errors
    def kept(self, run_id: int, key: bytes | None) -> Kept | None:
        """A yes/no run, its outcomes and confidences, read at once (one state of the history),
        when its signature under `key` holds (a keyed writer recorded them so): what a recheck
        compares. None when it does not; without a key, as the history holds them."""
        with self.db.transaction(snapshot=True):
            found = self.db.execute("SELECT mac FROM runs WHERE id = ?", (run_id,)).fetchone()
            row = dict(zip(_SIGNED, self._signed_row(run_id), strict=True))
            verdicts = self._signed_verdicts(run_id)
            run = self.run(run_id)
        if key is not None and (
            found is None or not genuine(key, found[0], *_run_parts(row, verdicts))
        ):
            return None
        # the run's own fields, read in the same state, are the signed ones
        return Kept(
            run,
            {e: (bool(label), None if p is None else bool(p)) for e, label, p, _ in verdicts},
            {e: float(c) for e, _, _, c in verdicts if c is not None},
        )

    @_refusing_database_errors
    def runs(self, criterion: str | None = None, purpose: str | None = None) -> list[HistoryRun]:
        """Runs in the order this history received them (its own ids: no writer's clock decides
        which run is the latest, so a run dated ahead by a fast clock or an import is never
        "latest" for ever); of one criterion and one purpose when given."""
        where, args = [], []
        if criterion is not None:
            where.append("criterion = ?")
            args.append(criterion)
        if purpose is not None:
            where.append("purpose = ?")
            args.append(purpose)
        sql = (
            f"SELECT {_COLUMNS} FROM runs"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY id"
        )
        return [_run(row) for row in self.db.execute(sql, args)]

    @_refusing_database_errors
    def found_drift(self, run_id: int) -> None:
        """Mark a recheck run as having found DRIFT: its judge changed from that run's time on.
        Under an evidence key, the findings are sealed again when their seal held before
        (judgekit.watch.seal: one that did not stays so, till a keyed writer `vouch`es)."""
        key = evidence_key()
        with self.db.transaction(lock="seal"):  # one writer of the seal at a time (PostgreSQL)
            before = read_seal(self.db, identify(self.db)[0])
            self.db.execute("UPDATE runs SET drift = 'DRIFT' WHERE id = ?", (run_id,))
            if key is not None and before.holds(key):
                (found,) = self.db.execute(
                    "SELECT criterion, fingerprint, created_at FROM runs WHERE id = ?", (run_id,)
                ).fetchall()
                added = (str(found[0]), str(found[1]), str(found[2]))
                write_seal(self.db, key, [*before.findings, added], before.lapses)

    @_refusing_database_errors
    def vouch(self, key: bytes) -> bool:
        """Under the evidence key: a history whose findings' seal does not verify is sealed again
        with a lapse now (judgekit.watch.seal), so nothing from before counts; True when it was."""
        with self.db.transaction(lock="seal"):
            return vouch(self.db, identify(self.db)[0], key)

    @_refusing_database_errors
    def run(self, run_id: int) -> HistoryRun:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise InputError.one(
                self.path, f"run {run_id}", "no such run; `judgekit history` lists them"
            )
        return _run(row)

    @_refusing_database_errors
    def outcomes(self, run_id: int) -> dict[str, tuple[bool, bool | None]]:
        """Example id -> (label, verdict) of one run; verdict None is an abstention."""
        rows = self.db.execute(
            "SELECT example_id, label, passed FROM verdicts WHERE run_id = ?", (run_id,)
        )
        return {
            example_id: (bool(label), None if passed is None else bool(passed))
            for example_id, label, passed in rows
        }

    @_refusing_database_errors
    def record_look(self, look: Look) -> int:
        with self.db.transaction():
            return self._insert_look(look)

    def _insert_look(self, look: Look) -> int:
        return self.db.insert(
            "INSERT INTO test_looks (criterion, at, purpose, generation, examples, alpha, p_value, "
            "accepted, candidate, uid) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                look.criterion,
                (look.at or datetime.now(UTC)).isoformat(),
                look.purpose,
                look.generation,
                json.dumps(list(look.examples)),
                look.alpha,
                look.p_value,
                None if look.accepted is None else int(look.accepted),
                look.candidate,
                uuid.uuid4().hex,
            ),
        )

    @_refusing_database_errors
    def take_look(  # noqa: PLR0913  compare --adopt (cli) and improve call it; fewer breaks them
        self,
        criterion: str,
        split: TestSplit,
        alpha: float,
        purpose: str,
        candidate: str | None = None,
        always: bool = False,
        accepted: bool | None = None,
        unless_seen: bool = False,
    ) -> tuple[Budget, int | None]:
        """The next look at a criterion's test split, taken: its budget read and the look recorded
        in one transaction that holds the criterion's looks (SQLite: the one writer; PostgreSQL: a
        lock per criterion), so two runs sharing a history never spend the same look. A look the
        budget has no room for is not taken unless `always` (recorded with alpha 0); `unless_seen`:
        not taken when `candidate` was looked at before. Returns the budget and the look's id (None
        when none was taken); `settle_look` adds its outcome, and a run that stops before keeps it
        spent. The looks are read by today's identities (`split.aliases`)."""
        with self.db.transaction(lock=f"looks:{criterion}"):
            looks = [
                replace(k, examples=tuple(split.aliases.get(i, i) for i in k.examples))
                for k in self.looks(criterion)
            ]
            budget = next_look(looks, split.ids, alpha)
            if (budget.look is None and not always) or (
                unless_seen and any(k.candidate == candidate for k in looks)
            ):
                return budget, None
            return budget, self._insert_look(
                Look(
                    criterion,
                    purpose,
                    budget.generation,
                    budget.examples,
                    budget.alpha or 0.0,
                    accepted=accepted,
                    candidate=candidate,
                )
            )

    @_refusing_database_errors
    def settle_look(self, look_id: int, p_value: float | None, accepted: bool | None) -> None:
        with self.db.transaction():
            self.db.execute(
                "UPDATE test_looks SET p_value = ?, accepted = ? WHERE id = ?",
                (p_value, None if accepted is None else int(accepted), look_id),
            )

    @_refusing_database_errors
    def looks(self, criterion: str) -> list[Look]:
        """The looks at a criterion's test split, oldest first."""
        rows = self.db.execute(
            "SELECT criterion, purpose, generation, examples, alpha, p_value, accepted, candidate, "
            "at FROM test_looks WHERE criterion = ? ORDER BY id",
            (criterion,),
        )
        return [
            Look(
                c,
                purpose,
                generation,
                tuple(json.loads(examples)),
                alpha,
                p,
                None if a is None else bool(a),
                candidate,
                datetime.fromisoformat(at),
            )
            for c, purpose, generation, examples, alpha, p, a, candidate, at in rows
        ]

    def edit_measured_on_test(self, c: CriterionReport, before: str | None = None) -> None:
        """A changed judge measured on test-split examples is a look at the split (the one who
        edited it sees the figures), whatever the run's --split: recorded, spending the split's
        budget (judgekit.watch.alpha_budget). A criterion's first judge is not a change; one whose
        report on disk (`before`: its fingerprint) is of another judge is, whatever this history
        holds (a new history file is no fresh start). A pattern is a judge too, and so is another
        verdict file of a recorded judge."""
        if c.held_out is None or c.judge is None:
            return
        # A recorded judge is its verdict file too: another file under the same fingerprint (a
        # re-export with other verdicts) is another judge.
        recorded = (c.inputs or {}).get("verdicts")
        judge = c.fingerprint if recorded is None else f"{c.fingerprint}+{recorded[:16]}"
        earlier = [
            r
            for r in self.runs(c.id, "calibrate")
            if r.fingerprint != c.fingerprint
            or (recorded is not None and r.verdicts_sha != recorded)
        ]
        if earlier or (before is not None and before != c.fingerprint):
            # unless this judge's figures were seen before
            self.take_look(
                c.id, c.held_out, ALPHA, "calibrate", judge, always=True, unless_seen=True
            )

    @_refusing_database_errors
    def record_label_change(
        self,
        criterion: str,
        example_id: str,
        old: bool | None,
        new: bool,
        annotator: str | None = None,
        made_by: str = "human",
    ) -> None:
        """A label changed in review (`judgekit label --review`): which, from what, to what, by
        whom, and how it was made (a person's, unless said)."""
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO label_changes (criterion, example_id, old, new, annotator, at, uid, "
                "made_by) VALUES (?,?,?,?,?,?,?,?)",
                (
                    criterion,
                    example_id,
                    None if old is None else int(old),
                    int(new),
                    annotator,
                    datetime.now(UTC).isoformat(),
                    uuid.uuid4().hex,
                    made_by,
                ),
            )

    @_refusing_database_errors
    def label_changes(self, criterion: str) -> list[LabelChange]:
        """Each label changed in review, oldest first."""
        rows = self.db.execute(
            "SELECT example_id, old, new, annotator, at, made_by FROM label_changes "
            "WHERE criterion = ? ORDER BY id",
            (criterion,),
        )
        return [
            LabelChange(
                e,
                None if o is None else bool(o),
                bool(n),
                a,
                datetime.fromisoformat(at),
                m,
            )
            for e, o, n, a, at, m in rows
        ]

    def changed_since_last(self, criterion: str) -> int | None:
        """Labels changed in review since the criterion's latest calibration; None before its
        first."""
        past = self.runs(criterion, "calibrate")
        if not past:
            return None
        last = max(_aware(r.created_at) for r in past)
        return sum(1 for c in self.label_changes(criterion) if _aware(c.at) > last)

    @_refusing_database_errors
    def confidences(self, run_id: int) -> dict[str, float]:
        """Example id -> the confidence of its verdict, where the run kept one (selective
        judging)."""
        rows = self.db.execute(
            "SELECT example_id, confidence FROM verdicts WHERE run_id = ? AND confidence IS NOT "
            "NULL",
            (run_id,),
        )
        return {example_id: float(confidence) for example_id, confidence in rows}

    @_refusing_database_errors
    def split_warning(self, criterion: str, prompt_sha: str | None) -> str | None:
        """Warn when this prompt (its few-shot examples included) has been measured on the dev
        split, where it was tuned, and never on the test split: its figures are optimistic."""
        same_prompt = "prompt_sha IS NULL" if prompt_sha is None else "prompt_sha = ?"
        splits = {
            row[0]
            for row in self.db.execute(
                f"SELECT DISTINCT split FROM runs WHERE criterion = ? AND {same_prompt} "
                f"AND purpose = 'calibrate'",
                (criterion,) if prompt_sha is None else (criterion, prompt_sha),
            )
        }
        if "dev" in splits and "test" not in splits:
            return (
                "this prompt has only been measured on the dev split it was tuned on; "
                "run `judgekit calibrate --split test` before trusting its figures"
            )
        return None


_COLUMNS = (
    "id, criterion, created_at, purpose, fingerprint, model, prompt_sha, parameters, "
    "set_fingerprint, "
    "split, source, n, abstained, metrics, api_base, via, structured, verdicts_sha, threshold, kind"
)


def _run(row: tuple[Any, ...]) -> HistoryRun:
    (
        run_id,
        criterion,
        created,
        purpose,
        fp,
        model,
        prompt_sha,
        parameters,
        set_fp,
        split,
        source,
        n,
        abstained,
        metrics,
        api_base,
        via,
        structured,
        verdicts_sha,
        threshold,
        kind,
    ) = row
    return HistoryRun(
        run_id,
        criterion,
        datetime.fromisoformat(created),
        purpose,
        fp,
        model,
        prompt_sha,
        json.loads(parameters),
        set_fp,
        split,
        source,
        n,
        abstained,
        json.loads(metrics),
        api_base,
        via,
        None if structured is None else bool(structured),
        verdicts_sha,
        threshold,
        kind,
    )


def record_history(
    report: Report,
    path: str | Path,
    purpose: str = "calibrate",
    before: Report | None = None,
) -> Report:
    """Keep a fresh report's runs in the history at `path`; return it with the warnings the
    history adds (a prompt measured only on the split it was tuned on). `before`: the report on
    disk this run replaces, whose judges tell a changed one even in a new history."""
    with History.open(path) as history:
        changed = {c.id: history.changed_since_last(c.id) for c in report.criteria}
        history.record(report, purpose)
        for c in report.criteria:
            earlier = before.criterion(c.id) if before is not None else None
            history.edit_measured_on_test(c, earlier.fingerprint if earlier else None)
        criteria = []
        for c in report.criteria:
            warning = history.split_warning(c.id, c.judge.prompt_sha if c.judge else None)
            c = c.model_copy(update={"labels_changed": changed[c.id]})
            criteria.append(
                c.model_copy(update={"warnings": [*c.warnings, warning]}) if warning else c
            )
    return report.model_copy(update={"criteria": criteria})
