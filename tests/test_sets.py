import json

import pytest
from pydantic import ValidationError

from judgekit.errors import InputError
from judgekit.inputs.criteria import load_criteria
from judgekit.inputs.sets import Selection, load_set, load_sets
from tests.conftest import REPO, balanced, llm_criterion


def load(project, records, name="c"):
    return load_set(project.jsonl(name, records), name)


def test_bundled_sets_have_at_least_20_of_each_class():
    criteria = load_criteria(REPO / "criteria")
    sets = load_sets(REPO / "calibration_sets", criteria)
    for cid, s in sets.items():
        good = sum(e.label for e in s.examples)
        assert good >= 20 and len(s.examples) - good >= 20, cid


def test_majority_of_annotators(project):
    s = load(
        project, [{"id": "a", "output": "x", "labels": {"ana": True, "ben": False, "eve": True}}]
    )
    assert s.examples[0].passed is True


def test_annotator_tie_names_the_example(project):
    path = project.jsonl(
        "c", [{"id": "tied-one", "output": "x", "labels": {"ana": True, "ben": False}}]
    )
    with pytest.raises(InputError, match=r"c.jsonl:line 1 \(id tied-one\): .*tied"):
        load_set(path, "c")


def test_passed_contradicting_majority(project):
    with pytest.raises(InputError, match=r"id z\).*majority"):
        load(
            project,
            [
                {
                    "id": "z",
                    "output": "x",
                    "passed": False,
                    "labels": {"a": True, "b": True, "c": False},
                }
            ],
        )


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": "m", "output": "x"}, r"line 1 \(id m\): .*has no label"),
        (
            {"id": "s", "output": "x", "passed": "yes"},
            r"line 1 \(id s\).passed: Input should be a valid boolean",
        ),
        (
            {"id": "n", "output": "x", "passed": 1},
            r"line 1 \(id n\).passed: Input should be a valid boolean",
        ),
        (
            {"id": "u", "output": "x", "passed": True, "lable": True},
            r"line 1 \(id u\).lable: unknown key",
        ),
        ({"output": "x", "passed": True}, r"line 1.id: required key is missing"),
        ({"id": "q", "output": "x", "passed": True, "split": "train"}, r"line 1 \(id q\).split"),
    ],
)
def test_record_rejections_name_file_and_place(project, record, message):
    path = project.jsonl("c", [record])
    with pytest.raises(InputError, match=message) as caught:
        load_set(path, "c")
    assert str(path) in str(caught.value)


def test_duplicate_ids(project):
    with pytest.raises(InputError, match=r"line 2 \(id a\): duplicate id 'a' \(first at line 1\)"):
        load(
            project,
            [
                {"id": "a", "output": "x", "passed": True},
                {"id": "a", "output": "y", "passed": False},
            ],
        )


def test_empty_set(project):
    path = project.sets / "c.jsonl"
    path.write_text("\n")
    with pytest.raises(InputError, match=r"c.jsonl: holds no examples"):
        load_set(path, "c")


def test_invalid_json_line(project):
    path = project.sets / "c.jsonl"
    path.write_text('{"id": "a", "output": "x", "passed": true}\n{"id": oops}\n')
    with pytest.raises(InputError, match=r"c.jsonl:line 2: is not valid JSON"):
        load_set(path, "c")


def test_every_bad_record_is_listed(project):
    with pytest.raises(InputError) as caught:
        load(
            project,
            [
                {"id": "a", "output": "x"},
                {"id": "b", "output": "y"},
                {"id": "c", "output": "z", "passed": True},
            ],
        )
    assert len(caught.value.problems) == 2


def test_leakage_of_few_shot_examples(project):
    shots = [{"input": "lost card", "output": "reply-p0: blocked", "passed": True}]
    project.criterion(llm_criterion("says-blocked", examples=shots))
    project.jsonl("says-blocked", balanced())
    with pytest.raises(InputError, match=r"says-blocked.jsonl:id p0: is also a few-shot example"):
        load_sets(project.sets, load_criteria(project.criteria))


def test_missing_and_ambiguous_sets(project):
    project.criterion(llm_criterion("says-blocked"))
    with pytest.raises(InputError, match=r"no calibration set for criterion 'says-blocked'"):
        load_sets(project.sets, load_criteria(project.criteria))
    project.jsonl("says-blocked", balanced())
    (project.sets / "says-blocked.csv").write_text("id,output,passed\na,x,true\n")
    with pytest.raises(InputError, match=r"several calibration sets"):
        load_sets(project.sets, load_criteria(project.criteria))


def test_csv_and_yaml_formats(project):
    csv_path = project.sets / "c.csv"
    csv_path.write_text(
        "id,output,passed,labels.ana,labels.ben,labels.eve,tags\n"
        "1,yes,true,,,,a;b\n2,no,,false,false,true,\n"
    )
    s = load_set(csv_path, "c")
    assert [(e.id, e.passed, e.tags) for e in s.examples] == [
        ("1", True, ["a", "b"]),
        ("2", False, []),
    ]
    bad = project.sets / "d.csv"
    bad.write_text("id,output,passed\n1,yes,maybe\n")
    with pytest.raises(InputError, match=r"d.csv:line 2 \(id 1\).passed"):
        load_set(bad, "d")
    yaml_path = project.sets / "e.yaml"
    yaml_path.write_text(
        "examples:\n  - {id: a, output: x, passed: true}\n  - {id: b, output: y, passed: nope}\n"
    )
    with pytest.raises(InputError, match=r"e.yaml:\[1\] \(id b\).passed"):
        load_set(yaml_path, "e")


def test_set_fingerprint_tracks_content(project):
    a = load(project, balanced())
    b = load(project, balanced()[:-1] + [{**balanced()[-1], "passed": True}])
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == load(project, balanced()).fingerprint


def test_a_duplicate_id_is_reported_beside_the_first_records_other_problem(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "pass-07", "output": "a", "passed": "maybe"}\n{"id": "pass-07", "output": "b", '
        '"passed": true}\n'
    )
    with pytest.raises(InputError) as error:
        load_set(path, "c")
    assert [p.location for p in error.value.problems] == [
        "line 1 (id pass-07).passed",
        "line 2 (id pass-07)",
    ]
    assert "duplicate id 'pass-07' (first at line 1)" in str(error.value)


def test_a_csv_with_two_passed_columns_is_refused_not_read_last_wins(project):
    path = project.sets / "c.csv"
    path.write_text("id,output,passed,passed\na,x,true,false\nb,y,false,true\n")
    with pytest.raises(InputError) as caught:
        load_set(path, "c")
    assert [(p.source, p.location) for p in caught.value.problems] == [(str(path), "line 1")]
    assert "column 'passed' twice" in caught.value.problems[0].message


def test_a_record_with_passed_twice_is_refused(project):
    path = project.sets / "c.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "passed": true}\n{"id": "b", "output": "y", "passed": true, '
        '"passed": false}\n'
    )
    with pytest.raises(InputError) as caught:
        load_set(path, "c")
    assert [(p.location, "key 'passed' twice" in p.message) for p in caught.value.problems] == [
        ("line 2", True)
    ]


def test_a_json_syntax_error_does_not_hide_the_other_lines_problems(project):
    path = project.sets / "c.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "passed": "yes"}\n{"id": oops}\n{"id": "c", "output": "z"}\n'
        '{"id": "d", "output": "w", "passed": true, "passed": false}\n'
    )
    with pytest.raises(InputError) as caught:
        load_set(path, "c")
    assert [p.location for p in caught.value.problems] == [
        "line 1 (id a).passed",
        "line 2",
        "line 3 (id c)",
        "line 4",
    ]


def test_few_shot_leakage_is_listed_beside_the_sets_other_problems(project):
    shots = [{"input": "lost card", "output": "reply-p0: blocked", "passed": True}]
    project.criterion(llm_criterion("says-blocked", examples=shots))
    project.jsonl("says-blocked", [*balanced(), {"id": "bad", "output": "x", "passed": "maybe"}])
    with pytest.raises(InputError) as caught:
        load_sets(project.sets, load_criteria(project.criteria))
    assert {p.location for p in caught.value.problems} == {"line 7 (id bad).passed", "id p0"}


def test_examples_read_with_the_same_keys_share_one_set_of_names_and_a_copy_changes_only_itself(
    tmp_path,
):
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "passed": true}\n{"id": "b", "output": "y", "passed": false}\n'
        '{"id": "c", "output": "z", "labels": {"ana": true}}\n'
    )
    a, b, c = load_set(path, "c").examples
    assert a.model_fields_set is b.model_fields_set and a.model_fields_set == {
        "id",
        "output",
        "passed",
    }
    assert c.model_fields_set == {"id", "output", "labels"} and c.passed is True
    changed = a.model_copy(update={"context": "source"})
    assert (
        changed.context == "source"
        and a.context is None
        and b.model_fields_set == {"id", "output", "passed"}
    )


def test_a_loaded_example_is_stored_compactly_and_behaves_as_pydantic_built_it(tmp_path):
    """The bulk reader stores each example's fields in a key-sharing instance dictionary (a
    million examples fit the recorded-scale benchmark's memory goal only so): what a model does
    is unchanged — equal to the model pydantic builds, dumped alike (what was given too), frozen,
    copied without touching the others, pickled."""
    import pickle
    import tracemalloc

    from judgekit.inputs.sets import Example
    from judgekit.inputs.validation import shared_names

    records = [
        {"id": f"e{i}", "input": f"question {i}", "output": f"reply {i}", "passed": i % 2 == 0}
        for i in range(200)
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load_set(path, "c").examples
    built = [Example.model_validate(r) for r in records]
    assert list(loaded) == built and built == list(loaded)
    first, plain = loaded[0], built[0]
    assert first.model_dump() == plain.model_dump()
    assert (
        first.model_dump(exclude_unset=True) == records[0] == plain.model_dump(exclude_unset=True)
    )
    assert first.model_dump_json() == plain.model_dump_json() and first.label is True
    with pytest.raises(ValidationError):
        first.output = "changed"  # type: ignore[misc]  # frozen: the assignment is the test
    copied = first.model_copy(update={"split": "test"})
    assert copied.split == "test" and first.split is None and loaded[1].split is None
    assert "split" not in loaded[1].model_fields_set
    assert pickle.loads(pickle.dumps(first)) == plain
    # what a thousand examples weigh, their texts apart: as the reader keeps them, as pydantic
    # builds them
    names: dict[frozenset[str], set[str]] = {}
    record = records[0]

    def weight(make) -> float:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = [make() for _ in range(1000)]
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept) == 1000
        return (after - before) / 1000

    compact = weight(lambda: shared_names(Example.model_validate(record), names))
    assert compact < weight(lambda: Example.model_validate(record)) / 2


def test_a_yaml_set_refuses_a_key_beside_its_examples(tmp_path):
    """A key the reader does not know, beside `examples:`, was dropped unread (a misspelt
    setting silently did nothing): it is an input error naming the file and the key."""
    from judgekit.errors import InputError
    from judgekit.inputs.sets import load_set

    path = tmp_path / "says-blocked.yaml"
    path.write_text(
        "contxt_file: policies/card.md\n"
        "examples:\n"
        "  - {id: p1, output: blocked, passed: true}\n"
        "  - {id: f1, output: not yet, passed: false}\n"
    )
    with pytest.raises(InputError) as refused:
        load_set(path, "says-blocked")
    assert "contxt_file" in str(refused.value) and str(path) in str(refused.value)
    path.write_text(path.read_text().split("\n", 1)[1])  # the examples alone load
    assert [e.id for e in load_set(path, "says-blocked").examples] == ["p1", "f1"]


def _read_both(tmp_path, field, value):
    """A two-record drawn set whose selection records hold `field` = `value` (left out: None),
    read by the set's model and by the gate's fast reader: (model's, reader's), None where
    refused."""
    from judgekit.inputs.label_reader import read_labels

    record = {"pool": "p", "stratum": "pass", "sizes": {"fail": 1, "pass": 1}, "position": 0}
    record |= {"round": 1} if field == "plan" else {}
    if value is not None:
        record[field] = value
    path = tmp_path / "says-blocked.jsonl"
    path.write_text(
        json.dumps({"id": "a", "output": "blocked", "passed": True, "selection": record})
        + "\n"
        + json.dumps(
            {"id": "b", "output": "no", "passed": False, "selection": {**record, "stratum": "fail"}}
        )
        + "\n"
    )
    found = []
    for read in (
        lambda: load_set(path, "says-blocked").examples[0].drawn(),
        lambda: read_labels(path, "says-blocked").examples[0].selection,
    ):
        try:
            found.append(read())
        except InputError:
            found.append(None)
    return found[0], found[1]


@pytest.mark.parametrize("value", [None, 1, 2, 0, -1, True, "1", 1.0])
def test_a_selection_records_round_is_read_alike_by_the_set_loader_and_the_gates_reader(
    tmp_path, value
):
    """A draw's round (`label --next`) decides how a pool's rates are estimated, so the gate's
    fast reader and the set's model accept and refuse the same rounds and read the same one."""
    model, fast = _read_both(tmp_path, "round", value)
    assert model == fast
    assert (model is not None) == (value in (None, 1, 2) and not isinstance(value, (bool, float)))
    if model is not None:
        assert model[4] == value  # its round


def test_a_selection_record_without_a_plan_dumps_as_it_did_so_its_sets_fingerprint_holds():
    old = {"pool": "p", "stratum": "pass", "sizes": {"pass": 3}, "position": 0, "round": 1}
    assert Selection(**old).model_dump(mode="json") == old  # what sets drawn before plans hold
    planned = Selection(**old, plan=[2, 2]).model_dump(mode="json")
    assert planned == {**old, "plan": [2, 2]}
    assert Selection(**planned).as_tuple()[4:6] == (1, (2, 2))


@pytest.mark.parametrize(
    "plan",
    [None, [20, 20], [5], [0], [], "20", [True], [20.0], [1] * 20, [1] * 21],
    ids=repr,
)
def test_a_selection_records_plan_is_read_alike_by_the_set_loader_and_the_gates_reader(
    tmp_path, plan
):
    model, fast = _read_both(tmp_path, "plan", plan)
    assert model == fast
    valid = plan is None or (
        isinstance(plan, list)
        and 1 <= len(plan) <= 20
        and all(type(n) is int and n >= 1 for n in plan)
    )
    assert (model is not None) == valid
    if model is not None:
        assert model[5] == (None if plan is None else tuple(plan))
