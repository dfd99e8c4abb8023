"""An interrupted run resumes from its cache: no completed call repeated, no verdict lost."""

import signal
import subprocess
import sys
import time

import diskcache
import pytest

from judgekit.pipeline import Options, measure
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion

VERDICTS = script({"reply-p": True, "reply-f": False})
N = 30


def start_run(project, server):
    command = [
        sys.executable,
        "-m",
        "judgekit.cli",
        "calibrate",
        "--model",
        "openai/j",
        "--api-base",
        server.url,
        "--concurrency",
        "2",
        "--cache-dir",
        str(project.root / "cache"),
        "--out",
        str(project.root / "out"),
    ]
    return subprocess.Popen(
        command, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_requests(server, count, timeout=60):
    deadline = time.monotonic() + timeout
    while len(server.log) < count:
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_interrupted_run_resumes_without_repeating_calls(project, sig):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(N // 2, N // 2))
    with FakeServer(VERDICTS, latency=0.05) as server:
        process = start_run(project, server)
        wait_for_requests(server, 12)
        process.send_signal(sig)
        _, err = process.communicate(timeout=30)
        if sig == signal.SIGINT:
            assert process.returncode == 130 and "run the same command again to resume" in err
        else:
            assert process.returncode == -signal.SIGKILL
        cached = len(diskcache.Cache(str(project.root / "cache")))
        first = len(server.log)  # counted on arrival, so calls in flight at the kill are included
        assert 10 <= cached <= first < N
        report = measure(
            Options(
                criteria_dir=project.criteria,
                sets_dir=project.sets,
                model="openai/j",
                api_base=server.url,
                cache_dir=project.root / "cache",
            )
        )
        resumed = len(server.log) - first
    assert resumed == N - cached, "a cached call was repeated or a missing one skipped"
    c = report.criteria[0]
    assert c.n == N and c.abstained == 0 and c.disagreements == []
    assert c.usage.cached == cached and c.usage.calls == N - cached
