import hashlib
from datetime import UTC, datetime

import pytest

from judgekit.errors import InputError
from judgekit.judging.recorded import RecordedVerdict
from judgekit.pipeline import Options, measure
from tests.conftest import balanced, llm_criterion


@pytest.fixture
def setup(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    return project


def run(project, verdicts_path, **extra):
    return measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, verdicts=verdicts_path, **extra
        )
    )


def write(project, name, text):
    path = project.root / name
    path.write_text(text)
    return path


def test_jsonl_with_abstention_and_reasons(setup):
    lines = [f'{{"id": "p{i}", "passed": true, "reason": "ok"}}' for i in range(3)]
    lines += [
        '{"id": "f0", "passed": false}',
        '{"id": "f1", "passed": true, "reason": "missed"}',
        '{"id": "f2", "passed": null}',
    ]
    c = run(setup, write(setup, "v.jsonl", "\n".join(lines))).criteria[0]
    assert (c.confusion.tp, c.confusion.fp, c.confusion.tn, c.confusion.fn, c.abstained) == (
        3,
        1,
        1,
        0,
        1,
    )
    assert {d.id: (d.verdict, d.abstention) for d in c.disagreements} == {
        "f1": (True, None),
        "f2": (None, "recorded"),
    }
    assert c.judge.source == "recorded:v.jsonl"


def test_csv_with_empty_cell_as_abstention(setup):
    text = (
        "id,passed,criterion\np0,true,says-blocked\np1,TRUE,says-blocked\np2,,says-blocked\n"
        "f0,false,says-blocked\nf1,0,says-blocked\nf2,no,says-blocked\n"
    )
    c = run(setup, write(setup, "v.csv", text)).criteria[0]
    assert (c.confusion.tp, c.confusion.tn, c.abstained) == (2, 3, 1)
    # of the very bytes read
    assert c.inputs["verdicts"] == hashlib.sha256(text.encode()).hexdigest()


def test_unknown_ids_and_missing_examples_are_listed(setup):
    text = "\n".join(
        [
            '{"id": "p0", "passed": true}',
            '{"id": "ghost", "passed": true}',
            '{"id": "f0", "passed": false}',
        ]
    )
    with pytest.raises(InputError) as caught:
        run(setup, write(setup, "v.jsonl", text))
    message = str(caught.value)
    assert "v.jsonl:says-blocked: 1 verdict(s) for ids not in" in message and "ghost" in message
    assert "4 example(s)" in message and "p1, p2, f1, f2" in message


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"id": "p0"}', r"v.jsonl:line 1: has no verdict; add 'passed': true, false or null"),
        (
            '{"id": "p0", "passed": "yes"}',
            r"v.jsonl:line 1.passed: Input should be a valid boolean",
        ),
        ('{"id": "p0", "passed": true, "score": 9}', r"v.jsonl:line 1.score: unknown key"),
        ('{"id": "p0", "passed": true}\n{"id": "p0", "passed": false}', r"p0: has two verdicts"),
    ],
)
def test_bad_verdict_records(setup, text, message):
    with pytest.raises(InputError, match=message):
        run(setup, write(setup, "v.jsonl", text))


def test_trials_in_a_verdict_file(setup):
    rows = [
        f'{{"id": "{e}", "passed": {str(e.startswith("p")).lower()}, "trial": {t}}}'
        for e in ("p0", "p1", "p2", "f0", "f1", "f2")
        for t in range(3)
    ]
    rows[0] = '{"id": "p0", "passed": false, "trial": 0}'
    c = run(setup, write(setup, "v.jsonl", "\n".join(rows))).criteria[0]
    assert c.consistency.trials == 3 and c.consistency.unstable == ["p0"] and c.confusion.tp == 3


def test_llm_criterion_missing_from_the_file_is_an_error(setup):
    setup.criterion(llm_criterion("other"))
    setup.jsonl("other", balanced(1, 1))
    text = '{"id": "p0", "passed": true, "criterion": "says-blocked"}'
    with pytest.raises(InputError, match=r"v.jsonl:other: has no verdicts for this LLM criterion"):
        run(setup, write(setup, "v.jsonl", text))


def test_slices_per_tag(project):
    project.criterion(llm_criterion())
    rows = balanced(3, 3)
    for row in rows:
        row["tags"] = ["short"] if row["id"] in ("p0", "f0") else ["long"]
    project.jsonl("says-blocked", rows)
    path = write(
        project,
        "v.jsonl",
        "\n".join(f'{{"id": "{r["id"]}", "passed": {str(r["id"] != "f0").lower()}}}' for r in rows),
    )
    c = run(project, path).criteria[0]
    assert set(c.slices) == {"short", "long"}
    assert (c.slices["short"].n, c.slices["short"].tnr, c.slices["long"].tnr) == (2, 1.0, 0.0)


def test_a_verdict_record_with_passed_twice_is_refused(setup):
    from judgekit.judging.recorded import load_recorded

    path = write(
        setup,
        "v.jsonl",
        '{"id": "p0", "passed": true}\n{"id": "p1", "passed": false, "passed": true}\n',
    )
    with pytest.raises(InputError) as caught:
        load_recorded(path)
    assert [(p.source, p.location) for p in caught.value.problems] == [(str(path), "line 2")]
    assert "key 'passed' twice" in str(caught.value)


def test_a_trusted_verdict_is_what_model_construct_builds():
    at = datetime(2026, 1, 2, tzinfo=UTC)
    given = dict(
        criterion="c",
        id="e1",
        trial=1,
        passed=None,
        raw="??",
        stage=0,
        reason="(unparseable) ",
        claims=None,
        at=at,
        judge="abc",
        confidence=0.5,
        probe="addressed",
    )
    fast, slow = RecordedVerdict.trusted(**given), RecordedVerdict.model_construct(**given)
    assert fast == slow and fast.line() == slow.line() and fast.model_dump() == slow.model_dump()
    assert (
        list(fast.__dict__) == list(slow.__dict__)
        and fast.model_fields_set == slow.model_fields_set
    )
    # the shared set of field names is copied, not changed
    changed = fast.model_copy(update={"passed": True})
    assert (
        changed.passed is True
        and fast.passed is None
        and fast.model_fields_set == slow.model_fields_set
    )
    with pytest.raises(TypeError, match="trial"):
        RecordedVerdict.trusted(**{k: v for k, v in given.items() if k != "trial"})
