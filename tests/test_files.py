"""The readers every file goes through: JSON and YAML refuse duplicate keys, lone surrogates and
nesting too deep to read, naming the file and the line; CSV refuses a column named twice."""

import json

import pytest

from judgekit.errors import InputError
from judgekit.inputs.files import iter_records, read_yaml
from judgekit.inputs.parsing import parse_json
from judgekit.report import Report


def problems(path):
    """Every problem of a record file, whether the reader raises them or hands them over."""
    try:
        return [record for _, record in iter_records(path) if not isinstance(record, dict)]
    except InputError as error:
        return error.problems


def test_a_duplicate_key_in_a_json_document_is_named_with_its_line(tmp_path):
    path = tmp_path / "report.json"
    lines = Report(criteria=[]).model_dump_json(indent=2).splitlines()
    path.write_text("\n".join([lines[0], '  "judging_s": 1.5,', '  "judging_s": 2.5,', *lines[1:]]))
    with pytest.raises(InputError) as caught:
        Report.read(path)
    [problem] = caught.value.problems
    assert (problem.source, problem.location) == (str(path), "line 3")
    assert "key 'judging_s' twice" in problem.message and "keep one" in problem.message


def test_the_same_key_in_two_objects_is_no_duplicate(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "passed": true, "labels": {"id": true, "passed": true}}\n'
    )
    assert problems(path) == []


def test_a_duplicate_key_in_a_jsonl_record_names_the_record_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "passed": true}\n{"id": "b", "output": "y", "passed": true, '
        '"labels": {"ana": true, "ana": false}}\n'
    )
    [problem] = problems(path)
    assert (problem.location, "key 'ana' twice" in problem.message) == ("line 2", True)


def test_deep_json_nesting_is_an_input_error_with_the_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "passed": true}\n{"id": "b", "output": ' + deep + "}\n"
    )
    [problem] = problems(path)
    assert problem.location == "line 2" and "nested" in problem.message
    whole = tmp_path / "report.json"
    whole.write_text('{"criteria":\n\n' + deep + "}")
    with pytest.raises(InputError) as caught:
        Report.read(whole)
    assert [(p.location, "nested" in p.message) for p in caught.value.problems] == [
        ("line 3", True)
    ]


def test_deep_yaml_nesting_is_an_input_error_with_the_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("id: c\nquestion: q?\nexamples: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(InputError) as caught:
        read_yaml(path)
    [problem] = caught.value.problems
    assert (problem.source, problem.location) == (
        str(path),
        "line 3",
    ) and "nested" in problem.message


@pytest.mark.parametrize(
    "text, location, field",
    [
        ('{"id": "a", "output": "ok \\ud800", "passed": true}\n', "line 1", "output"),
        (
            '{"id": "a", "output": "x", "passed": true}\n'
            '{"id": "b", "output": "y", "labels": {"\\udfff": true}}\n',
            "line 2",
            "labels",
        ),
        (
            '{"id": "a", "output": "x", "tags": ["t", "\\udc00 "], "passed": true}\n',
            "line 1",
            "tags[1]",
        ),
    ],
    ids=["in-a-value", "in-a-key", "in-a-list"],
)
def test_a_lone_surrogate_in_json_names_line_and_field(tmp_path, text, location, field):
    path = tmp_path / "c.jsonl"
    path.write_text(text)
    [problem] = problems(path)
    assert problem.location == location and problem.message.startswith(f"{field}: ")
    assert "surrogate" in problem.message
    # A whole character written as its escaped surrogate pair is fine.
    path.write_text('{"id": "a", "output": "\\ud83d\\ude00", "passed": true}\n')
    assert problems(path) == []


def test_a_lone_surrogate_in_yaml_names_line_and_field(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text('id: c\nquestion: "Is it \\ud800 polite?"\n')
    with pytest.raises(InputError) as caught:
        read_yaml(path)
    [problem] = caught.value.problems
    assert (
        problem.location == "line 2"
        and problem.message.startswith("question: ")
        and "surrogate" in problem.message
    )


def test_a_duplicate_yaml_key_is_named_and_merge_keys_still_work(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("id: c\nkind: regex\nmatch_means: fail\npattern: x\nmatch_means: pass\n")
    with pytest.raises(InputError) as caught:
        read_yaml(path)
    [problem] = caught.value.problems
    assert (problem.location, "key 'match_means' twice (first at line 3)" in problem.message) == (
        "line 5",
        True,
    )
    path.write_text("base: &b {a: 1, b: 2}\nmerged:\n  <<: *b\n  b: 3\n")
    assert read_yaml(path)["merged"] == {"a": 1, "b": 3}


COUNTER = """
import sys, time
from pathlib import Path
from judgekit.inputs.files import locked
path = Path(sys.argv[1])
for _ in range(int(sys.argv[2])):
    with locked(path):  # read, pause, write back: two holders at once lose an increment
        value = int(path.read_text())
        time.sleep(0.0002)
        path.write_text(str(value + 1))
"""


def test_a_lock_file_is_removed_after_use_and_still_lets_one_holder_in_at_a_time(tmp_path):
    """Four processes take turns 1,600 times, each removing the lock file as it leaves: a waiter
    that locked a file removed meanwhile must lock the one on disk again, or increments are lost."""
    import subprocess
    import sys

    from judgekit.inputs.files import locked

    path = tmp_path / "counter"
    path.write_text("0")
    workers = [
        subprocess.Popen([sys.executable, "-c", COUNTER, str(path), "400"]) for _ in range(4)
    ]
    assert [w.wait(120) for w in workers] == [0, 0, 0, 0]
    assert path.read_text() == "1600"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter"]  # no .counter.lock left behind
    with locked(path):
        assert (tmp_path / ".counter.lock").exists()  # held: it is there
    assert not (tmp_path / ".counter.lock").exists()


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "a", "passed": true, "tags": ["x", {"k": null}]}',
        '[1, 2.5, "é"]',
        '  {"a": {"b": {"c": []}}}  ',
        '"text"',
        "null",
    ],
)
def test_json_is_read_as_json_loads_reads_it(text):
    assert parse_json(text, "f.jsonl", "line 1") == json.loads(text)


@pytest.mark.parametrize("text", ['\ufeff{"id": "a"}', '{"id": "a"} x', "", '{"id": }'])
def test_bad_json_is_worded_as_json_loads_words_it(text):
    try:
        json.loads(text)
    except json.JSONDecodeError as expected:
        message = expected.msg
    with pytest.raises(InputError) as caught:
        parse_json(text, "f.jsonl", "line 1")
    [problem] = caught.value.problems
    assert (problem.location, problem.message) == ("line 1", f"is not valid JSON: {message}")
