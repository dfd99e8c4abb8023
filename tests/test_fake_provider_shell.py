"""`python -m judgekit.testing --verdicts FILE`: a fake provider scripted per example from the shell
(pass, fail or a fault kind by example id, found by its output text, or by a piece of the reply),
as the Python FakeServer is; and a Fault in a Python script, for FakeServer and FakeLLM alike."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from judgekit.inputs.criteria import LLMCriterion
from judgekit.judging.judge import Judge
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeLLM, FakeServer, Fault, script
from tests.conftest import REPO, balanced, llm_criterion

FAST = RetryPolicy(attempts=2, base_s=0.01, cap_s=0.02, first_contact_attempts=2, down_after=5)
ROWS = [
    {"id": "p0", "verdict": "fail"},
    {"id": "f0", "verdict": "pass"},
    {"id": "p1", "verdict": "garbage"},
    {"id": "f1", "verdict": "server_error"},
    {"id": "p2", "verdict": "refusal"},
    {"match": "reply-p3: bl", "verdict": "pass"},
]


def serve(*args: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    """Start `python -m judgekit.testing` on a free port; its URL once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "judgekit.testing", "--port", "0", "--latency", "0", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    for line in process.stdout:  # type: ignore[union-attr]
        if line.startswith("listening on "):
            return process, line.removeprefix("listening on ").strip()
    raise AssertionError(process.stderr.read())  # type: ignore[union-attr]


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    process.wait(10)


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_a_verdict_file_scripts_each_example_by_id_or_by_a_piece_of_its_reply(project, kind):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(4, 4))
    path = project.root / f"verdicts.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, ["id", "match", "verdict"])
            writer.writeheader()
            writer.writerows(ROWS)
    process, url = serve("--verdicts", str(path), "--verdict", "fail", cwd=project.root)
    try:
        report = measure(
            Options(
                criteria_dir=project.criteria,
                sets_dir=project.sets,
                model="openai/j",
                api_base=url,
                cache_dir=None,
                retry=FAST,
                timeout_s=5,
                concurrency=2,
            )
        )
    finally:
        stop(process)
    c = report.criteria[0]
    verdicts = {e: verdict for e, (_, verdict) in c.outcomes.items()}
    assert verdicts == {
        "p0": False,
        "f0": True,
        "p1": None,
        "f1": None,
        "p2": None,
        "p3": True,
        "f2": False,
        "f3": False,
    }  # f2, f3: not listed, the default (fail)
    causes = {d.id: d.abstention for d in c.disagreements if d.verdict is None}
    assert causes == {"p1": "unparseable", "f1": "error: server", "p2": "refusal"}
    assert c.usage.reasked == 1  # p1's garbage was asked again, and was garbage again


def test_a_bad_verdict_file_lists_every_problem_and_exits_2(project):
    project.jsonl("says-blocked", balanced(2, 2))
    path = project.root / "verdicts.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"id": "p0", "verdict": "maybe"}),
                json.dumps({"id": "nope", "verdict": "pass"}),
                json.dumps({"verdict": "pass"}),
                "{not json",
                json.dumps({"id": "p1", "verdict": "pass", "claims": []}),
                json.dumps({"match": "x", "claims": [{"claim": "a", "supported": "maybe"}]}),
                json.dumps({"match": "y", "claims": [{"claim": "b", "supported": True}]}),
                json.dumps({"match": "z", "claims": [{"claim": "b", "supported": False}]}),
            ]
        )
        + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "judgekit.testing", "--port", "0", "--verdicts", str(path)],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and "7 problems in the input" in done.stderr
    assert (
        "verdicts.jsonl:line 1.verdict: Input should be 'pass', 'fail', 'rate_limit'" in done.stderr
    )
    assert (
        "verdicts.jsonl:line 2: no example 'nope' in the calibration sets in calibration_sets"
        in done.stderr
    )
    assert (
        "verdicts.jsonl:line 3: give the example's id" in done.stderr
        and "verdicts.jsonl:line 4" in done.stderr
    )
    assert "verdicts.jsonl:line 5: give a verdict (pass, fail or a fault kind) or claims" in (
        done.stderr
    )
    assert "verdicts.jsonl:line 6.claims.0.supported" in done.stderr
    assert "verdicts.jsonl:line 8: claim 'b' is scripted False here and True" in done.stderr
    assert "listening" not in done.stdout


def test_a_fault_in_a_python_script_for_the_server_and_the_in_process_fake(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(2, 2))
    verdicts = script(
        {"reply-p0": Fault("rate_limit"), "reply-p1": Fault("malformed_json"), "reply-f": False}
    )
    with FakeServer(verdicts, retry_after=0.01) as server:
        c = measure(
            Options(
                criteria_dir=project.criteria,
                sets_dir=project.sets,
                model="openai/j",
                api_base=server.url,
                cache_dir=None,
                retry=FAST,
                timeout_s=5,
            )
        ).criteria[0]
    assert (
        server.stats["rate_limit"] == FAST.first_contact_attempts
        and server.stats["malformed_json"] == 2
    )
    assert {d.id: d.abstention for d in c.disagreements} == {
        "p0": "error: rate_limit",
        "p1": "unparseable",
    }
    fake = FakeLLM.scripted({"down": Fault("server_error"), "odd": Fault("garbage")})
    judge = Judge(LLMCriterion(id="c", question="Is it polite?", judge={"model": "m"}), llm=fake)
    assert judge("down").abstention == "error: server" and judge("odd").abstention == "unparseable"
    with pytest.raises(ValueError, match="unknown fault kind 'oops'"):
        Fault("oops")


POLICY = "Lost cards are blocked at once. A replacement card costs 5 euros."
OTHER = "Lost cards are blocked at once. A replacement card is free of charge."
CLAIMS_SET = [
    {"id": "all-supported", "output": "Blocked. It costs 5 euros.", "passed": True},
    {"id": "one-unsupported", "output": "Blocked, and free.", "passed": False},
    {"id": "no-claims", "output": "Happy to help!", "passed": False},
    {"id": "fee-here", "output": "The new card is free.", "passed": False},
    {"id": "fee-there", "output": "The new card is free.", "context": OTHER, "passed": True},
    {"id": "verifier-refuses", "output": "Blocked for you.", "passed": True},
    {"id": "by-text", "output": "I have refunded the fee.", "passed": False},
    {"id": "plain-fail", "output": "Your card works again.", "passed": False},
    {"id": "unlisted", "output": "Your card is blocked.", "passed": True},
]
BLOCKED = {"claim": "The card is blocked", "supported": True}
CLAIMS_SCRIPT = [
    {"id": "all-supported", "claims": [BLOCKED, {"claim": "It costs 5 euros", "supported": True}]},
    {
        "id": "one-unsupported",
        "claims": [BLOCKED, {"claim": "The new card is free", "supported": False}],
    },
    {"id": "no-claims", "claims": []},
    # The same reply and claim against two sources: each example's own source decides.
    {"id": "fee-here", "claims": [{"claim": "The new card is free", "supported": False}]},
    {"id": "fee-there", "claims": [{"claim": "The new card is free", "supported": True}]},
    {"id": "verifier-refuses", "claims": [{"claim": "Card blocked", "supported": "refusal"}]},
    {"match": "refunded", "claims": [{"claim": "The fee was refunded", "supported": False}]},
    {"id": "plain-fail", "verdict": "fail"},  # a plain verdict: the reply is one claim, unsupported
]


@pytest.mark.parametrize("batch", [True, False])
def test_a_claims_check_calibrates_end_to_end_from_the_shell(project, batch):
    """`python -m judgekit.testing --verdicts FILE` answers both steps of a claims check: the
    claims each example's extraction lists, and each claim's support (a fault kind as today), so
    `judgekit calibrate` of a `kind: claims` criterion runs from the shell with no Python fake.
    The file's own lines are CSV cells too (the claims as JSON text). Before, every extraction got
    a pass/fail verdict and all nine examples abstained ("not a list of claims")."""
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported by the policy?",
            "batch": batch,
            "judge": {"model": "openai/checker"},
        }
    )
    project.jsonl("grounded", [{"context": POLICY, **e} for e in CLAIMS_SET])
    path = project.root / "verdicts.csv"
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, ["id", "match", "verdict", "claims"])
        writer.writeheader()
        for row in CLAIMS_SCRIPT:
            claims = row.get("claims")
            writer.writerow({**row, "claims": None if claims is None else json.dumps(claims)})
    process, url = serve("--verdicts", str(path), cwd=project.root)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "judgekit.cli", "calibrate", "--no-history", "--no-cache"],
            cwd=project.root,
            capture_output=True,
            text=True,
            timeout=120,
            env={
                "PYTHONPATH": str(REPO),
                "PATH": "/usr/bin:/bin",
                "OPENAI_BASE_URL": url,
                "OPENAI_API_KEY": "sk-test",
            },
        )
    finally:
        stop(process)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    lines = (project.root / ".judgekit/reports/latest/verdicts.jsonl").read_text().splitlines()
    verdicts = {line["id"]: line for line in map(json.loads, lines) if "id" in line}
    assert {i: v["passed"] for i, v in verdicts.items()} == {
        "all-supported": True,
        "one-unsupported": False,
        "no-claims": False,
        "fee-here": False,
        "fee-there": True,
        "verifier-refuses": None,
        "by-text": False,
        "plain-fail": False,
        "unlisted": True,  # the default (pass): the reply is its one claim, supported
    }
    claims = {i: [c["claim"] for c in v.get("claims") or ()] for i, v in verdicts.items()}
    assert claims["all-supported"] == ["The card is blocked", "It costs 5 euros"]
    assert claims["plain-fail"] == ["Your card works again."]
    # a refused verification leaves its claim undecided: an abstention, never a guess
    assert verdicts["verifier-refuses"]["reason"].startswith("(unparseable verification)")
    assert verdicts["fee-there"]["claims"][0]["supported"] is True


def test_a_claims_script_refuses_what_it_could_not_answer_as_written():
    """A claim a claims check would read otherwise (spaces around it, two lines) or one text
    scripted two ways in a Python script is refused, saying why, instead of being answered with
    the default."""
    from judgekit.testing import Claims

    with pytest.raises(ValueError, match="on one line, without spaces around it"):
        Claims({" The fee is waived ": False})
    with pytest.raises(ValueError, match="on one line"):
        Claims({"Fee waived\n2. Card blocked": False})
    with pytest.raises(ValueError, match="scripted True for one reply and False for another"):
        script({"reply A": Claims({"Fee waived": False}), "reply B": Claims({"Fee waived": True})})


def _shell(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judgekit.testing", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_a_detached_fake_judge_returns_once_it_listens_and_stops_when_told(tmp_path):
    """--detach is what the README's walk starts its fake judge with: the command returns once
    the server answers, the server outlives it, and --stop ends it; one already running, or a
    port already held, is said with the fix, never a second server that answers nothing."""
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    held = holder.getsockname()[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed
    try:
        taken = _shell("--port", str(held), "--detach", cwd=tmp_path)
        assert taken.returncode == 2 and "cannot listen on" in taken.stderr, taken
        assert "another --port" in taken.stderr
        assert not (tmp_path / ".judgekit" / "fake-judge.pid").exists()

        started = _shell("--port", str(port), "--latency", "0", "--detach", cwd=tmp_path)
        assert started.returncode == 0, started.stderr
        assert f"listening on http://127.0.0.1:{port}/v1" in started.stdout
        pid = int((tmp_path / ".judgekit" / "fake-judge.pid").read_text())
        import urllib.request

        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            data=json.dumps(
                {
                    "model": "judge",
                    "messages": [{"role": "user", "content": "<output>\nhi\n</output>"}],
                }
            ).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answered:  # it answers, detached
            assert '\\"passed\\": true' in answered.read().decode()

        again = _shell("--port", str(port), "--detach", cwd=tmp_path)
        assert again.returncode == 2 and "--stop" in again.stderr

        stopped = _shell("--stop", cwd=tmp_path)
        assert stopped.returncode == 0 and "stopped the fake judge" in stopped.stdout
        # --stop returns once the server is gone: its port is free for the next one at once
        assert not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid)
        nothing = _shell("--stop", cwd=tmp_path)
        assert nothing.returncode == 2 and "no fake judge to stop" in nothing.stderr

        # a process id left by a server that died is no reason to refuse a new one
        (tmp_path / ".judgekit" / "fake-judge.pid").write_text(f"{2**22 + 7}\n")
        restarted = _shell("--port", str(port), "--detach", cwd=tmp_path)
        assert restarted.returncode == 0, restarted.stderr
        assert _shell("--stop", cwd=tmp_path).returncode == 0
    finally:
        holder.close()
        if (tmp_path / ".judgekit" / "fake-judge.pid").exists():
            _shell("--stop", cwd=tmp_path)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


def test_a_record_that_names_a_model_scripts_that_model_alone(project):
    """Two judges on one fake server, for `judgekit compare`: a record with `model` answers
    that model's requests before the shared records; every other model keeps the shared ones."""
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    path = project.root / "verdicts.jsonl"
    rows = [
        {"match": "reply-f", "verdict": "fail"},  # both judges fail the known-bad replies...
        {"match": "reply-f1", "verdict": "pass", "model": "lenient"},  # ...but lenient passes f1
        {"id": "p0", "verdict": "fail", "model": "strict"},  # and strict fails p0
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    process, url = serve("--verdicts", str(path), cwd=project.root)
    try:
        verdicts = {}
        for model in ("lenient", "strict", "other"):
            report = measure(
                Options(
                    criteria_dir=project.criteria,
                    sets_dir=project.sets,
                    model=f"openai/{model}",
                    api_base=url,
                    cache_dir=None,
                    retry=FAST,
                    timeout_s=5,
                )
            )
            outcomes = report.criteria[0].outcomes.items()
            verdicts[model] = {e for e, (_, verdict) in outcomes if verdict}
    finally:
        stop(process)
    assert verdicts == {
        "lenient": {"p0", "p1", "p2", "f1"},
        "strict": {"p1", "p2"},
        "other": {"p0", "p1", "p2"},
    }


def test_sure_scripts_the_answer_tokens_probability_and_only_for_a_verdict(tmp_path):
    """`sure` is how sure a scripted pass or fail is (selective judging reads it from the
    answer token's log-probability); given with a fault kind it is refused, naming the place."""
    from judgekit.errors import InputError
    from judgekit.testing import Sure
    from judgekit.testing.verdict_file import load_script

    path = tmp_path / "verdicts.jsonl"
    path.write_text('{"match": "usually", "verdict": "pass", "sure": 0.6}\n')
    assert load_script(path, tmp_path).by_match == {"usually": Sure(True, 0.6)}
    path.write_text(
        '{"match": "usually", "verdict": "rate_limit", "sure": 0.6}\n'
        '{"match": "often", "verdict": "fail", "sure": 1.5}\n'
    )
    with pytest.raises(InputError) as refused:
        load_script(path, tmp_path)
    said = str(refused.value).splitlines()
    assert said[1].endswith(
        "line 1: sure is how sure a pass or fail verdict is; give it with verdict pass or fail"
    )
    assert said[2].endswith("line 2.sure: Input should be less than or equal to 1")


def test_an_abbreviated_detach_is_refused_not_passed_on_to_the_server_it_starts(tmp_path):
    """The detached server gets the command's arguments less `--detach`: `--det`, were it taken
    for it, would be passed on, and every server would start another."""
    refused = _shell("--det", "--port", "0", cwd=tmp_path)
    assert refused.returncode == 2 and "unrecognized arguments: --det" in refused.stderr
    assert not (tmp_path / ".judgekit").exists()
