"""A million examples are never held twice: verdict files are matched as they are read, JSON Lines
files are read line by line, a report holds the engine's verdicts (not a record each) and writes
verdicts.jsonl block by block, and its mappings by example id are held as built."""

import gc
import hashlib
import json
import tracemalloc
import weakref

import pytest
from pydantic import ValidationError

from judgekit.errors import InputError
from judgekit.inputs.files import SourceLines, iter_records, write_atomic
from judgekit.inputs.label_reader import read_labels
from judgekit.inputs.sets import load_set
from judgekit.judging.matching import match_file
from judgekit.judging.recorded import RecordedVerdict, iter_recorded
from judgekit.judging.verdict_log import VerdictLog
from judgekit.pipeline import Options, measure
from judgekit.report.model import ById, CriterionReport
from judgekit.secrets import redact_known_lines
from tests.conftest import balanced, llm_criterion


def test_recorded_verdicts_are_matched_as_they_are_read(project):
    project.jsonl("c", balanced(300, 300))
    path = project.root / "v.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": e["id"], "passed": e["passed"], "reason": "r"}) + "\n"
            for e in balanced(300, 300)
        )
    )
    alive: list[weakref.ref] = []
    most = 0

    def records():
        nonlocal most
        for _, record in iter_recorded(path):
            alive.append(weakref.ref(record))
            most = max(most, sum(1 for r in alive if r() is not None))
            yield record

    matched = match_file(path, records(), {"c": load_set(project.sets / "c.jsonl", "c")})
    assert matched.problems == [] and len(matched.trials["c"]) == 600
    assert len(alive) == 600 and most <= 2  # the one being matched, and the one the generator holds


def test_records_naming_no_criterion_wait_until_it_is_known_whose_they_are(project):
    project.jsonl("a", balanced(1, 1))
    project.jsonl("b", balanced(1, 1))
    sets = {cid: load_set(project.sets / f"{cid}.jsonl", cid) for cid in ("a", "b")}
    unnamed = [RecordedVerdict(id="p0", passed=True), RecordedVerdict(id="f0", passed=False)]
    named = [RecordedVerdict(criterion="a", id="p0", passed=True, trial=1)]
    matched = match_file(project.root / "v.jsonl", iter(unnamed + named), sets)
    assert matched.problems == [] and list(matched.trials) == ["a"]
    assert [[v.trial for v in t] for t in matched.trials["a"]] == [[0, 1], [0]]
    b = [RecordedVerdict(criterion="b", id="p0", passed=True)]
    both = match_file(project.root / "v.jsonl", iter(unnamed + named + b), sets)
    assert "cannot be matched to 2 criteria" in str(both.problems[0])
    # A record naming no criterion is refused beside two criteria even when it is an escalated
    # judge's, and an empty criterion names none.
    escalated = [
        RecordedVerdict(criterion="a", id="p0", passed=True),
        *b,
        RecordedVerdict(id="nope", passed=True, stage=1),
    ]
    assert "cannot be matched to 2 criteria" in str(
        match_file(project.root / "v.jsonl", iter(escalated), sets).problems[0]
    )
    empty = [
        RecordedVerdict(criterion="", id="p0", passed=True),
        RecordedVerdict(criterion="", id="f0", passed=False),
    ]
    assert (
        match_file(project.root / "v.jsonl", iter(empty), {"a": sets["a"]}).trials["a"][1][0].passed
        is False
    )
    assert "cannot be matched to 2 criteria" in str(
        match_file(project.root / "v.jsonl", iter(empty + named + b), sets).problems[0]
    )


def test_a_report_holds_the_engines_verdicts_and_makes_each_record_as_it_is_read(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(20, 20))
    path = project.root / "v.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": e["id"], "passed": e["passed"], "reason": "said so"}) + "\n"
            for e in balanced(20, 20)
        )
    )
    report = measure(Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=path))
    gc.collect()
    # none held, by the report or else
    assert not [o for o in gc.get_objects() if isinstance(o, RecordedVerdict)]
    assert report.criteria[0].inputs["verdicts"] == hashlib.sha256(path.read_bytes()).hexdigest()
    log = report.criteria[0].verdicts
    assert isinstance(log, VerdictLog) and len(log) == 40
    assert [v.id for v in log] == [e["id"] for e in balanced(20, 20)] and log == list(log)
    report.write(project.root / "out")
    written = (project.root / "out" / "verdicts.jsonl").read_text().splitlines()
    assert written == [v.line().rstrip("\n") for v in log] and '"reason":"said so"' in written[0]


def test_a_json_lines_file_is_read_line_by_line_never_whole(project):
    rows = [{**e, "output": e["output"] + " " + "x" * 2000} for e in balanced(1500, 1500)]
    project.jsonl("c", rows)
    path = project.sets / "c.jsonl"
    size = path.stat().st_size
    # Read whole, the file's bytes and its text alone would be twice its size.
    # the examples hold every reply
    for read, most in (
        (lambda: read_labels(path, "c"), 0.5 * size),  # labels only
        (lambda: load_set(path, "c"), 1.8 * size),
    ):
        tracemalloc.start()
        try:
            loaded = read()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert (
            len(loaded.examples) == 3000
            and loaded.digest == hashlib.sha256(path.read_bytes()).hexdigest()
        )
        assert peak < most, (peak, size)


def test_lines_read_one_by_one_are_the_texts_lines(tmp_path):
    path = tmp_path / "v.jsonl"
    data = (
        '\ufeff{"id": "a", "passed": true}\r\n'
        '{"id": "b\u2028c", "passed": false}\n\n'
        '{"id": "d", "passed": null}'
    )
    path.write_bytes(data.encode("utf-8"))
    source = SourceLines(path)
    with pytest.raises(RuntimeError):
        source.digest  # noqa: B018 - known only once every line is read
    assert list(source) == data.lstrip("\ufeff").split("\n")
    assert source.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [r["id"] for _, r in iter_records(path)] == ["a", "b\u2028c", "d"]
    path.write_bytes(b'{"id": "a", "passed": true}\n{"id": "\xff", "passed": true}\n')
    with pytest.raises(InputError) as caught:
        list(iter_records(path))
    assert caught.value.problems[0].location == "line 2" and "cannot be read" in str(caught.value)


def test_lines_written_in_blocks_keep_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_API_KEY", "sk-live-0123456789abcdef")
    monkeypatch.setenv("PEM_SECRET", "-----BEGIN KEY-----\nMIIabcdefghijkl\n-----END KEY-----")
    lines = [
        f'{{"id": "e{i}", "reason": "key sk-live-0123456789abcdef seen"}}\n' for i in range(50)
    ]
    lines[20:23] = ["-----BEGIN KEY-----\n", "MIIabcdefghijkl\n", "-----END KEY-----\n"]
    path = tmp_path / "verdicts.jsonl"
    write_atomic(path, iter(lines))
    text = path.read_text()
    assert "sk-live-0123456789abcdef" not in text and "MIIabcdefghijkl" not in text
    assert text.count("<JUDGE_API_KEY>") == 47 and text.count("<PEM_SECRET>") == 1
    monkeypatch.delenv("PEM_SECRET")
    blocks = list(redact_known_lines(lines, size=100))
    assert len(blocks) > 10 and "".join(blocks).count("<JUDGE_API_KEY>") == 47


def test_mappings_by_example_id_are_held_as_built_and_others_are_checked():
    outcomes = ById({"a": (True, None)})
    fields = dict(
        id="c",
        fingerprint="f",
        set_fingerprint="s",
        n=1,
        abstained=1,
        confusion={"tp": 0, "fp": 0, "tn": 0, "fn": 0},
        metrics={},
        intervals={},
        disagreements=[],
    )
    report = CriterionReport(**fields, outcomes=outcomes)
    assert report.outcomes is outcomes
    assert CriterionReport(**fields, outcomes={"a": [True, False]}).outcomes == {"a": (True, False)}
    with pytest.raises(ValidationError):
        CriterionReport(**fields, outcomes={"a": "passed"})
    with pytest.raises(ValidationError):
        CriterionReport(**fields, verdicts=[{"id": "a"}])  # a record without a verdict


def test_a_logs_lines_and_plain_fields_are_those_of_its_records():
    """verdicts.jsonl and the gate's reading are made without the records: what they give must be
    exactly what the records say, for every field a verdict can carry."""
    from datetime import UTC, datetime

    from judgekit.judging.verdicts import ClaimCheck, Verdict

    at = datetime(2026, 3, 1, 12, 0, 5, 250, tzinfo=UTC).timestamp()
    stages = [
        [
            [Verdict("a", True, "ok ✓", obtained_at=at), Verdict("a", False, trial=1)],
            [Verdict("b", None, "x", abstention="refusal", raw="{bad")],
            [
                Verdict(
                    "c",
                    False,
                    claims=(
                        ClaimCheck("the sky is green", False, "it is blue"),
                        ClaimCheck("y", None),
                    ),
                    confidence=0.75,
                    obtained_at=at,
                )
            ],
        ],
        [[Verdict("b", True, "escalated", confidence=1.0)]],
    ]
    # a probe's verdicts on its rewrites, by the id rewritten (after the stages)
    probes = {"addressed": [[Verdict("a", False, "bought", obtained_at=at)], [Verdict("b", None)]]}
    log = VerdictLog.of(
        "c1", stages, judge="abcd", started=datetime(2026, 1, 1, tzinfo=UTC), probes=probes
    )
    records = list(log)
    assert [r.probe for r in records][-3:] == [None, "addressed", "addressed"]
    assert list(log.lines()) == [r.line() for r in records]
    assert list(log.plain()) == [
        (r.criterion, r.id, r.trial, r.passed, r.at, r.confidence, r.stage, r.judge, r.probe)
        for r in records
    ]
    # a run started in another zone at the very instant a verdict was obtained: each time keeps
    # its own text (the lines write each time object once, by identity, not by equality)
    from datetime import timedelta, timezone

    started = datetime(2026, 3, 1, 13, 0, 5, 250, tzinfo=timezone(timedelta(hours=1)))
    assert started.timestamp() == at
    zoned = VerdictLog.of(
        "c1", [[[Verdict("a", True, obtained_at=at)], [Verdict("b", False)]]], None, started
    )
    assert list(zoned.lines()) == [r.line() for r in zoned]
    assert '"at":"2026-03-01T13:00:05.000250+01:00"' in list(zoned.lines())[1]
    assert [json.loads(line) for line in log.lines()][2]["passed"] is None
