"""Reliability, measured: every fault mode at 10% and 50%, several processes on one cache, random
interruptions, no pickle read back, fuzzed monitoring input. RELIABILITY.md cites these tests."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from judgekit.errors import InputError
from judgekit.gate import Gate
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion

VERDICTS = script({"reply-p": True, "reply-f": False})
RETRY = RetryPolicy(attempts=4, base_s=0.01, cap_s=0.05, first_contact_attempts=4, down_after=6)
N = 40
TRANSIENT = {
    "rate_limit": "error: rate_limit",
    "server_error": "error: server",
    "hang": "error: timeout",
    "reset": "error: dropped",
    "truncated": "error: ",
}
ANSWERS = {"garbage": "unparseable", "malformed_json": "unparseable", "refusal": "refusal"}
EXAMPLE = re.compile(r"reply-([pf]\d+):")


@pytest.fixture
def forty(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(N // 2, N // 2))
    return project


def _outcomes_per_example(server: FakeServer) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for _, prompt, outcome in server.log:
        found = EXAMPLE.findall(prompt)
        out.setdefault(found[-1], []).append(outcome)
    return out


@pytest.mark.parametrize("rate", [0.1, 0.5])
@pytest.mark.parametrize("fault", [*TRANSIENT, *ANSWERS])
def test_every_fault_mode_ends_each_example_in_a_verdict_or_an_explained_abstention(
    forty, fault, rate
):
    seed = sum(map(ord, fault)) + int(rate * 100)
    with FakeServer(VERDICTS, faults={fault: rate}, seed=seed, retry_after=0.02) as server:
        report = measure(
            Options(
                criteria_dir=forty.criteria,
                sets_dir=forty.sets,
                model="openai/judge",
                api_base=server.url,
                cache_dir=None,
                retry=RETRY,
                concurrency=8,
                timeout_s=0.3,
            )
        )
    c = report.criteria[0]
    by_example = _outcomes_per_example(server)
    assert len(by_example) == N  # every example was asked
    # The counts add up, and only real verdicts are counted: every decided verdict is
    # the scripted one.
    assert (
        c.n == N
        and c.confusion.tp + c.confusion.fp + c.confusion.tn + c.confusion.fn + c.abstained == N
    )
    assert all(d.verdict is None for d in c.disagreements)
    abstained = {d.id: d.abstention for d in c.disagreements}
    if fault in ANSWERS:
        # An unreadable answer is asked once more (retry.unreadable), a refusal is final: abstained
        # exactly where the last answer was the fault.
        expected = {e for e, outcomes in by_example.items() if outcomes[-1] == fault}
        assert set(abstained) == expected and all(
            cause == ANSWERS[fault] for cause in abstained.values()
        )
        again = 2 if fault != "refusal" else 1
        assert all(
            len(outcomes) == (again if outcomes[0] == fault else 1)
            for outcomes in by_example.values()
        )
        assert c.usage.reasked == sum(len(outcomes) - 1 for outcomes in by_example.values())
    else:
        # A transient fault is retried: abstained exactly where every attempt failed.
        expected = {e for e, outcomes in by_example.items() if "ok" not in outcomes}
        assert set(abstained) == expected
        assert all(cause.startswith(TRANSIENT[fault]) for cause in abstained.values()), abstained
        if rate == 0.1:
            assert not abstained  # 4 attempts at 10% lose an example one time in 10,000
    # the fault happened
    assert any(o == fault for outcomes in by_example.values() for o in outcomes)
    assert sum(map(len, by_example.values())) <= RETRY.attempts * N  # retries were bounded
    # The gate treats the abstentions by policy: above max_abstain_rate (10%) the
    # judge does not pass.
    decision = (
        Gate.from_project(forty.criteria, forty.sets, root=forty.root).check(report).decisions[0]
    )
    if c.abstained / N > 0.1:
        assert (
            decision.status != "PASS" and f"abstained on {c.abstained} of {N}" in decision.summary
        )


def _calibrate_into(args: tuple[str, str, str, str]) -> dict:
    criteria, sets, url, cache = args
    report = measure(
        Options(
            criteria_dir=Path(criteria),
            sets_dir=Path(sets),
            model="openai/judge",
            api_base=url,
            cache_dir=Path(cache),
            concurrency=4,
        )
    )
    c = report.criteria[0]
    return {"confusion": c.confusion.model_dump(), "abstained": c.abstained}


def test_several_processes_share_one_cache_without_corruption_or_lost_writes(forty, tmp_path):
    cache = tmp_path / "shared-cache"
    with FakeServer(VERDICTS, latency=0.01) as server:
        args = (str(forty.criteria), str(forty.sets), server.url, str(cache))
        with multiprocessing.get_context("spawn").Pool(4) as pool:
            results = pool.map(_calibrate_into, [args] * 4)
        asked = server.requests
        again = _calibrate_into(args)
        assert server.requests == asked  # every answer any process received was kept
    assert all(r == results[0] for r in results) and again == results[0]
    assert results[0]["confusion"] == {"tp": N // 2, "fp": 0, "tn": N // 2, "fn": 0}
    # processes may ask the same question at once; none asked twice for itself
    assert N <= asked <= 4 * N
    import diskcache

    with diskcache.Cache(str(cache)) as store:
        # diskcache's own integrity check finds nothing
        assert len(store) == N and store.check() == []


def _run_cli(project: Path, url: str) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "judgekit.cli",
        "calibrate",
        "--model",
        "openai/j",
        "--api-base",
        url,
        "--concurrency",
        "3",
        "--cache-dir",
        str(project / "cache"),
        "--out",
        str(project / "out"),
        "-q",
    ]
    return subprocess.Popen(
        command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _comparable(report_dir: Path) -> dict:
    data = json.loads((report_dir / "report.json").read_text())
    for c in data["criteria"]:
        # labels_changed reads the history, which the first run wrote: none before it, none since
        c.pop("calibrated_at"), c.pop("evidence_at"), c.pop("usage"), c.pop("labels_changed")
    # the verdict file's digest: its lines carry when each answer was obtained
    data.pop("created_at"), data.pop("judging_s"), data.pop("verdicts_sha256")
    return data


def test_interrupted_at_random_points_then_resumed_gives_the_uninterrupted_report(forty, tmp_path):
    rng = random.Random(20261130)
    with FakeServer(VERDICTS, latency=0.02) as server:
        clean = _run_cli(forty.root, server.url)
        assert clean.wait(60) == 0
        reference = _comparable(forty.root / "out")
        (forty.root / "out" / "report.json").unlink()
        import shutil

        shutil.rmtree(forty.root / "cache")
        server.log.clear()
        kills = []
        # three interruptions, each after a random number of calls, by SIGKILL or SIGINT
        for _ in range(3):
            process = _run_cli(forty.root, server.url)
            target = len(server.log) + rng.randint(2, 9)
            deadline = time.monotonic() + 60
            while len(server.log) < target and process.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            kind = rng.choice([signal.SIGKILL, signal.SIGINT])
            process.send_signal(kind)
            kills.append((kind, process.wait(30)))
        assert [code for _, code in kills] == [
            -signal.SIGKILL if kind == signal.SIGKILL else 130 for kind, _ in kills
        ]
        finished = _run_cli(forty.root, server.url)
        assert finished.wait(60) == 0, finished.stderr.read()
    prompts = [prompt for _, prompt, outcome in server.log if outcome == "ok"]
    # No completed call was repeated: an answer received before a kill was cached... unless the kill
    # landed between receiving it and writing it, which loses at most the calls in flight (3).
    repeated = len(prompts) - len(set(prompts))
    assert repeated <= 3 * 3
    assert len(set(prompts)) == N  # every example was asked, none lost
    assert _comparable(forty.root / "out") == reference


def test_nothing_read_back_is_unpickled(forty, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pickle.loads was called on data read back")

    with FakeServer(VERDICTS) as server:
        options = Options(
            criteria_dir=forty.criteria,
            sets_dir=forty.sets,
            model="openai/judge",
            api_base=server.url,
            cache_dir=forty.root / "cache",
        )
        measure(options)
        monkeypatch.setattr(pickle, "loads", refuse)
        monkeypatch.setattr(pickle, "load", refuse)

        again = measure(options)  # every answer from the cache
    assert again.criteria[0].usage.cached == N


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=300).map(lambda b: ("bin", b)),
        st.lists(
            st.dictionaries(
                st.sampled_from(["timestamp", "criterion", "passed", "trace_id", "x"]),
                st.one_of(
                    st.none(),
                    st.booleans(),
                    st.integers(-5, 2_000_000_000),
                    st.floats(allow_nan=True),
                    st.text(max_size=30),
                    st.lists(st.integers(), max_size=2),
                ),
            ),
            max_size=6,
        ).map(lambda rows: ("rows", rows)),
    ),
    st.sampled_from([".jsonl", ".csv"]),
)
def test_monitoring_input_fuzzed_gives_only_judgekit_errors(tmp_path, data, suffix):
    from judgekit.watch.samples import read_counts

    kind, value = data
    path = tmp_path / f"fuzz{suffix}"
    if kind == "bin":
        path.write_bytes(value)
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in value))
    else:
        import csv

        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(
                handle, fieldnames=["timestamp", "criterion", "passed", "trace_id", "x"]
            )
            writer.writeheader()
            writer.writerows(value)
    try:
        counts = read_counts(path, "1d")
    except InputError as error:
        assert str(path) in str(error)
    else:
        assert counts.rows >= 1 and all(sum(cell) >= 1 for cell in counts.cells.values())


def test_a_planted_key_reaches_no_file_and_no_message(forty, monkeypatch, tmp_path):
    """The key in the environment and in --api-base: not in the cache, report, verdicts, history,
    drift or monitor output, nor in any message printed."""
    from click.testing import CliRunner

    from judgekit.cli import app

    sentinel = "sk-planted-7e6d5c4b3a291807f6e5"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    runner = CliRunner()
    printed = []
    with FakeServer(VERDICTS, fail_first={"reply-p1:": ["server_error"]}) as server:
        secret_url = server.url.replace("http://", f"http://user:{sentinel}@")
        common = ["--model", "openai/judge", "--api-base", secret_url]
        for args in (
            ["calibrate", *common],
            ["calibrate", *common, "--no-cache"],
            ["recheck", *common, "--json"],
            ["drift"],
            ["history", "--json"],
        ):
            result = runner.invoke(app, args)
            printed.append(result.output)
            assert result.exit_code in (0, 1), result.output
    # the server is gone: an error message
    down = runner.invoke(app, ["calibrate", *common, "--no-cache"])
    assert down.exit_code == 4
    printed.append(down.output)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps(
            {"timestamp": "2026-11-30T00:00:00Z", "criterion": "says-blocked", "passed": True}
        )
        + "\n"
    )
    printed.append(
        runner.invoke(
            app, ["monitor", str(rows), "--json", "--plot", str(tmp_path / "p.png")]
        ).output
    )
    assert not any(sentinel in text for text in printed)
    written = [p for p in (forty.root / ".judgekit").rglob("*") if p.is_file()] + [
        tmp_path / "p.png"
    ]
    assert any(p.name == "history.sqlite" for p in written) and any(
        p.name == "report.json" for p in written
    )
    for path in written:
        assert sentinel.encode() not in path.read_bytes(), path


def test_credentials_in_the_endpoint_and_echoed_back_reach_no_file_and_no_message(
    forty, monkeypatch, tmp_path
):
    """A password and a query key in --api-base, and the Authorization header a provider echoes
    in an error body (Basic and Bearer, base64 included): in no report, verdict file, page, cache,
    history, JUnit file, step summary or message."""
    import base64

    from click.testing import CliRunner

    from judgekit.cli import app

    key, password, query_key = "sk-envkey-0a1b2c3d4e5f60718293", "pw-S3cret-5541", "qk-9a8b7c6d5e4f"
    secrets = [key, password, query_key, base64.b64encode(f"ana:{password}".encode()).decode()]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    runner = CliRunner()
    printed = []
    echoes = {"reply-p1:": ["echo"], "reply-f2:": ["echo"]}
    with FakeServer(VERDICTS, fail_first=echoes) as server:
        host = server.url.removeprefix("http://")
        # Bearer from the environment
        for url, extra in (
            (f"http://ana:{password}@{host}?api-key={query_key}", []),  # Basic auth, echoed
            (f"{server.url}?api-key={query_key}", ["--no-cache"]),
        ):
            server.fail_first.update({k: list(v) for k, v in echoes.items()})
            args = [
                "calibrate",
                "--model",
                "openai/judge",
                "--api-base",
                url,
                "--gate",
                "--junit",
                str(tmp_path / "junit.xml"),
                *extra,
            ]
            result = runner.invoke(app, args)
            printed.append(result.output)
            assert result.exit_code == 0, result.output
        report = json.loads((forty.root / ".judgekit/reports/latest/report.json").read_text())
        reasons = [d["reason"] for d in report["criteria"][0]["disagreements"] if d["abstention"]]
        assert len(reasons) == 2 and all(
            "cannot handle POST" in r and "authorization" in r for r in reasons
        )
        printed.append(
            runner.invoke(
                app,
                [
                    "recheck",
                    "--api-base",
                    f"http://ana:{password}@{host}?api-key={query_key}",
                    "--json",
                ],
            ).output
        )
    for bad in (
        f"htp://127.0.0.1:1/v1?api-key={query_key}",
        f"http://127.0.0.1:99999/v1?api-key={query_key}",
        f"http://127.0.0.1:notaport/v1?key={query_key}",
        f"http://[::1/v1?token={query_key}",
        f"http://ana:{password}@/v1",
    ):
        result = runner.invoke(app, ["calibrate", "--model", "openai/judge", "--api-base", bad])
        assert (
            result.exit_code == 2
            and "--api-base" in result.output
            and "Traceback" not in result.output
        ), result.output
        printed.append(result.output)
    for text in printed:
        assert not any(secret in text for secret in secrets), text
    written = [p for p in forty.root.rglob("*") if p.is_file()] + [summary, tmp_path / "junit.xml"]
    assert {
        "report.json",
        "report.md",
        "report.html",
        "verdicts.jsonl",
        "history.sqlite",
        "summary.md",
        "junit.xml",
    } <= {p.name for p in written}
    for path in written:
        data = path.read_bytes()
        assert not any(secret.encode() in data for secret in secrets), path


WRITER = """
import json, sys
from pathlib import Path
from judgekit.inputs.files import write_atomic
target = Path(sys.argv[1])
contents = [json.dumps({"version": v, "fill": str(v) * 400_000}) for v in ("a", "b")]
print("ready", flush=True)
i = 0
while True:
    write_atomic(target, contents[i % 2])
    i += 1
"""


def test_a_file_killed_mid_write_is_the_old_one_or_the_new_one(tmp_path):
    target = tmp_path / "report.json"
    rng = random.Random(7)
    for _ in range(5):
        process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert process.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.4))
        process.kill()
        process.wait(10)
        data = json.loads(target.read_text())  # whole, never half written
        assert data["version"] in ("a", "b") and len(data["fill"]) == 400_000


def test_a_script_in_a_reply_stays_text_in_the_markdown_report(project):
    from judgekit.report import to_markdown
    from judgekit.testing import FakeLLM

    project.criterion(llm_criterion())
    hostile = "<script>alert('x')</script> | `code` [link](http://x) *bold*"
    project.jsonl(
        "says-blocked",
        [
            {"id": "<img src=x onerror=alert(1)>", "output": hostile, "passed": True},
            {"id": "f", "output": "fine", "passed": False},
        ],
    )
    llm = FakeLLM(
        lambda request: (
            json.dumps({"reasoning": hostile, "passed": False})
            if "script" in request.messages[-1]["content"]
            else json.dumps({"reasoning": "no", "passed": False})
        )
    )
    report = measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=llm,
    )
    markdown = to_markdown(report)
    assert "<script>" not in markdown and "<img" not in markdown and "](http" not in markdown
    assert "&lt;script&gt;alert('x')&lt;/script&gt; &#124; &#96;code&#96;" in markdown


def test_the_model_string_is_escaped_in_the_markdown_report(project):
    from judgekit.report import to_markdown
    from judgekit.testing import FakeLLM

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(2, 2))
    report = measure(
        Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            cache_dir=None,
            model="openai/<img src=x onerror=alert(1)>`|",
        ),
        llm=FakeLLM.scripted({"reply-p": True}, default=False),
    )
    markdown = to_markdown(report)
    assert "<img" not in markdown and "&lt;img src=x onerror=alert(1)&gt;&#96;&#124;" in markdown
