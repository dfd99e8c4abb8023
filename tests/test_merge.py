"""`judgekit label --merge NEW -c ID` (judgekit.inputs.merge): labelled examples move from a file of
new ones into the criterion's calibration set, in the set's format, under both files' locks; every
problem listed at once and nothing changed on error; a merge cut off part way rolled back and
finished by merging again; records appended to either file meanwhile kept."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.inputs.criteria import load_criterion
from judgekit.inputs.label_writer import read_records
from judgekit.inputs.merge import merge
from judgekit.inputs.sets import load_set
from tests.conftest import balanced, llm_criterion
from tests.test_label import Stopped, _stopping_after

NEW = [
    {
        "id": "n1",
        "input": "lost card",
        "output": "Blocked, and a new card is on its way.",
        "passed": True,
    },
    {
        "id": "n2",
        "output": "Shall I block it?",
        "labels": {"ana": False, "ben": False, "eve": True},
    },
    {"id": "n3", "output": "Done: blocked.", "passed": True, "tags": ["short"]},
]


@pytest.fixture
def sets(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(2, 2))
    new = project.root / "new.jsonl"
    new.write_text("".join(json.dumps(r) + "\n" for r in NEW))
    return project, new


def _merge(project, new, *args):
    return CliRunner().invoke(
        app,
        [
            "label",
            "--merge",
            str(new),
            "-c",
            "says-blocked",
            "--criteria",
            str(project.criteria),
            "--sets",
            str(project.sets),
            *args,
        ],
    )


def test_labelled_records_move_into_a_jsonl_set_and_out_of_the_new_file(sets):
    project, new = sets
    before = (project.sets / "says-blocked.jsonl").read_text()
    size = new.stat().st_size
    done = _merge(project, new)
    assert done.exit_code == 0, done.output
    assert (
        f"moved 3 labelled example(s) from {new} into {project.sets / 'says-blocked.jsonl'}"
        in done.output
    )
    text = (project.sets / "says-blocked.jsonl").read_text()
    assert (
        text.startswith(before)
        and [json.loads(line) for line in text[len(before) :].splitlines()] == NEW
    )
    loaded = load_set(project.sets / "says-blocked.jsonl", "says-blocked")
    assert [e.id for e in loaded.examples][-3:] == ["n1", "n2", "n3"] and loaded.examples[
        -2
    ].passed is False
    assert read_records(new) == [] and new.stat().st_size == size  # blanked in place, not replaced
    # no lock, no journal
    assert sorted(p.name for p in project.root.iterdir() if p.name.startswith(".")) == []
    assert sorted(p.name for p in project.sets.iterdir()) == ["says-blocked.jsonl"]


def test_the_sets_format_is_kept_csv_gains_the_columns_it_lacks(sets):
    project, new = sets
    (project.sets / "says-blocked.jsonl").unlink()
    csv_set = project.sets / "says-blocked.csv"
    csv_set.write_bytes(
        b'\xef\xbb\xbfid,output,passed\r\np0,"reply-p0: blocked, yes",true\r\nf0,reply-f0,false\r\n'
    )
    assert _merge(project, new).exit_code == 0
    assert csv_set.read_bytes().decode("utf-8-sig").splitlines() == [
        "id,output,passed,input,labels.ana,labels.ben,labels.eve,tags",
        'p0,"reply-p0: blocked, yes",true,,,,,',
        "f0,reply-f0,false,,,,,",
        'n1,"Blocked, and a new card is on its way.",true,lost card,,,,',
        "n2,Shall I block it?,,,false,false,true,",
        "n3,Done: blocked.,true,,,,,short",
    ]
    assert csv_set.read_bytes().startswith(b"\xef\xbb\xbf") and b"\r\n" in csv_set.read_bytes()
    loaded = {e.id: e for e in load_set(csv_set, "says-blocked").examples}
    assert (loaded["n2"].passed, loaded["n2"].labels, loaded["n3"].tags) == (
        False,
        NEW[1]["labels"],
        ["short"],
    )
    # and a CSV of new examples into the CSV set: rows appended, columns kept
    more = project.root / "more.csv"
    more.write_text("id,output,labels.ana\nn4,Blocked.,true\n")
    assert _merge(project, more).exit_code == 0
    assert csv_set.read_bytes().decode().endswith("\r\nn4,Blocked.,,,true,,,\r\n")


def test_a_csv_of_new_examples_joins_a_jsonl_set_as_json(sets):
    project, _ = sets
    new = project.root / "new.csv"
    new.write_text(
        "id,output,passed,labels.ana,labels.ben\nc1,Blocked.,,true,true\nc2,Call us.,false,,\n"
    )
    assert _merge(project, new).exit_code == 0
    added = [
        json.loads(line)
        for line in (project.sets / "says-blocked.jsonl").read_text().splitlines()[-2:]
    ]
    assert added == [
        {"id": "c1", "output": "Blocked.", "labels": {"ana": True, "ben": True}},
        {"id": "c2", "output": "Call us.", "passed": False},
    ]


def test_every_problem_is_listed_at_once_and_nothing_changes(sets):
    project, new = sets
    new.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"id": "u1", "output": "not labelled yet"},
                # the set's p0 has other content
                {
                    "id": "p0",
                    "output": "another reply",
                    "passed": True,
                },
                {"id": "n1", "output": "x", "passed": True},
                {"id": "n1", "output": "y", "passed": False},
                {"id": "t1", "output": "tied", "labels": {"ana": True, "ben": False}},
                {"id": "k1", "output": "z", "passed": True, "note": "?"},
            ]
        )
    )
    files = {p: p.read_bytes() for p in (new, project.sets / "says-blocked.jsonl")}
    done = _merge(project, new)
    assert done.exit_code == 2
    for expected in [
        "5 problems in the input",
        "line 1 (id u1): has no label; label it first",
        "--labelled-only",
        "line 2 (id p0): the id 'p0' is already in",
        "with other content",
        "line 4 (id n1): duplicate id 'n1' (first at line 3)",
        "line 5 (id t1): the annotators are tied",
        "line 6 (id k1).note: unknown key",
    ]:
        assert expected in done.output, done.output
    assert {p: p.read_bytes() for p in files} == files
    missing = CliRunner().invoke(app, ["label", "--merge", str(new)])
    assert (
        missing.exit_code == 2
        and "name the criterion whose set the examples join: -c CRITERION" in missing.output
    )


def test_with_labelled_only_unlabelled_records_stay_in_the_new_file(sets):
    project, new = sets
    new.write_text(json.dumps({"id": "u1", "output": "later"}) + "\n" + json.dumps(NEW[0]) + "\n")
    done = _merge(project, new, "--labelled-only")
    assert (
        done.exit_code == 0
        and "1 unlabelled example(s) stay in" in done.output
        and "u1" in done.output
    )
    assert read_records(new) == [{"id": "u1", "output": "later"}]
    assert load_set(project.sets / "says-blocked.jsonl", "says-blocked").examples[-1].id == "n1"


def test_a_claims_criterion_refuses_examples_without_their_source(project):
    project.criterion({"id": "grounded", "kind": "claims", "question": "Is every claim supported?"})
    (project.sets / "grounded.jsonl").write_text("")
    new = project.root / "new.jsonl"
    new.write_text(json.dumps({"id": "g1", "output": "Paris is in France.", "passed": True}) + "\n")
    with pytest.raises(InputError, match="id g1: has no context"):
        merge(
            new, project.sets / "grounded.jsonl", load_criterion(project.criteria / "grounded.yaml")
        )
    assert read_records(new)[0]["id"] == "g1"


@pytest.mark.parametrize("stop_at", ["set", "new"])
def test_a_merge_cut_off_is_rolled_back_and_finished_by_merging_again(sets, stop_at):
    project, new = sets
    set_path = project.sets / "says-blocked.jsonl"
    criterion = load_criterion(project.criteria / "says-blocked.yaml")
    set_before, new_before = set_path.read_bytes(), new.read_bytes()
    calls = []

    def pwrite(fd, data, offset):  # the first write is the set's, the second the new file's
        calls.append(fd)
        if (stop_at == "set") == (len(calls) == 1):
            return _stopping_after(0.5)(fd, data, offset)
        return os.pwrite(fd, data, offset)

    with pytest.raises(Stopped):
        merge(new, set_path, criterion, pwrite=pwrite)
    torn = set_path if stop_at == "set" else new
    assert torn.with_name(f".{torn.name}.journal").exists()
    done = merge(new, set_path, criterion)
    [undone] = done.rolled_back
    assert undone.path == torn and "merge again to finish it" in str(undone)
    assert (
        "the addition of 3 record(s) (n1, n2, n3) by a merge"
        if stop_at == "set"
        else "the removal of 3 record(s) (n1, n2, n3) merged into a set"
    ) in str(undone)
    # Either way, each example is in the set once, and gone from the new file.
    assert (done.moved, done.already) == (
        (("n1", "n2", "n3"), ()) if stop_at == "set" else ((), ("n1", "n2", "n3"))
    )
    assert [e.id for e in load_set(set_path, "says-blocked").examples] == [
        "p0",
        "p1",
        "f0",
        "f1",
        "n1",
        "n2",
        "n3",
    ]
    assert set_path.read_bytes().rstrip(b"\n").startswith(set_before.rstrip(b"\n"))
    assert read_records(new) == [] and len(new.read_bytes()) >= len(new_before)


def test_records_appended_to_either_file_while_merging_are_kept(sets):
    project, new = sets
    set_path = project.sets / "says-blocked.jsonl"
    # held, as a logger's
    loggers = {path: os.open(path, os.O_WRONLY | os.O_APPEND) for path in (new, set_path)}

    writes = []

    def appended_meanwhile(fd, data, offset):
        writes.append(fd)
        for path, logger in loggers.items():
            record = {"id": f"late-{path.stem}-{len(writes)}", "output": "appended"}
            os.write(logger, (json.dumps(record) + "\n").encode())
        return os.pwrite(fd, data, offset)

    try:
        merge(
            new,
            set_path,
            load_criterion(project.criteria / "says-blocked.yaml"),
            pwrite=appended_meanwhile,
        )
    finally:
        for logger in loggers.values():
            os.close(logger)
    assert len(writes) == 2 and [r["id"] for r in read_records(new)] == ["late-new-1", "late-new-2"]
    ids = [r["id"] for r in read_records(set_path)]
    assert ids == [
        "p0",
        "p1",
        "f0",
        "f1",
        "n1",
        "n2",
        "n3",
        "late-says-blocked-1",
        "late-says-blocked-2",
    ]


def test_a_reply_holding_a_bare_carriage_return_keeps_its_row_in_a_csv_set(sets):
    """The csv module quotes only what the line ending holds: with "\\n" rows, a reply holding a
    bare "\\r" was written unquoted, and both readers split its row in two ("has no label")."""
    project, new = sets
    from judgekit.inputs.label_reader import read_labels

    (project.sets / "says-blocked.jsonl").unlink()
    csv_set = project.sets / "says-blocked.csv"
    csv_set.write_text("id,output,passed\np0,reply-p0: blocked,true\nf0,reply-f0,false\n")
    new.write_text(
        json.dumps({"id": "n1", "output": "Blocked.\rA new card", "passed": True}) + "\n"
    )
    assert _merge(project, new).exit_code == 0
    loaded = {e.id: e for e in load_set(csv_set, "says-blocked").examples}
    assert loaded["n1"].output == "Blocked.\rA new card" and loaded["n1"].passed is True
    assert [e.id for e in read_labels(csv_set, "says-blocked").examples] == ["p0", "f0", "n1"]
    # and its label changed in place, the row rewritten
    from judgekit.inputs.label_writer import write_label

    write_label(csv_set, "n1", False)
    again = load_set(csv_set, "says-blocked").examples[2]
    assert (again.output, again.passed) == ("Blocked.\rA new card", False)
