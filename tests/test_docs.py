"""The guides in docs/ run as written: each `$ command` of each console block runs in a fresh
folder (in order, as a person following the guide would), and what the command prints is what the
guide shows, line for line, the whole output: a line missing from the guide fails it as a line
the command no longer prints does. A date, a time or a duration in a line is not compared (the
rest of the line is).

`python tests/test_docs.py` rewrites the guides' outputs from a real run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
# every guide, and the README's walk from `judgekit init` to a gated test run (the site's home,
# index.md, and the reference pages show no command to run)
GUIDES = [*sorted(g for g in DOCS.glob("*.md") if g.name != "index.md"), DOCS.parent / "README.md"]
BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)
# a date, a time, a duration, judgekit's version, and the throwaway PostgreSQL server's address
VOLATILE = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}|\d+(\.\d+)? ?s\b|judgekit \d|postgresql://[\w.]+:\d+/\w+"
)
# the guides whose commands need a history in PostgreSQL (JUDGEKIT_HISTORY_URL: a new database)
ON_POSTGRES = {"history-on-postgresql"}


def _shell(command: str) -> str:
    """Run the guide's command with this checkout's judgekit and Python."""
    command = re.sub(r"^judgekit ", f"{sys.executable} -m judgekit.cli ", command)
    return re.sub(r"^python ", f"{sys.executable} ", command)


def run_guide(path: Path, folder: Path, history: str | None = None) -> list[tuple[str, str, int]]:
    """Every (command, output, exit code) of a guide, run in `folder` (with `history` as
    JUDGEKIT_HISTORY_URL when given)."""
    # Only judgekit's pytest plugin loads: what another installed package's plugin prints is no part
    # of a guide (and a guide recorded beside one would fail wherever it is absent).
    # pytest trims its summary lines to the terminal's width except on a CI machine (CI or
    # BUILD_NUMBER set): the guides are recorded trimmed at 200 columns, so neither variable passes.
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")},
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "NODE_NO_WARNINGS": "1",  # Node's warnings name its process id, which no guide can show
        "PYTHONPATH": str(DOCS.parent),
        "JUDGEKIT_REQUIRE_ALL": "",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_PLUGINS": "judgekit.pytest_plugin",
        **({"JUDGEKIT_HISTORY_URL": history} if history else {}),
    }
    out = []
    try:
        for block in BLOCK.findall(path.read_text()):
            for command in [line[2:] for line in block.splitlines() if line.startswith("$ ")]:
                done = subprocess.run(
                    _shell(command),
                    shell=True,
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                out.append((command, (done.stdout + done.stderr).rstrip("\n"), done.returncode))
    finally:  # a fake judge a guide left running (it stopped half way) holds its port
        if (folder / ".judgekit" / "fake-judge.pid").exists():
            subprocess.run(
                [sys.executable, "-m", "judgekit.testing", "--stop"], cwd=folder, env=env
            )
    return out


def shown(path: Path) -> list[tuple[str, list[str]]]:
    """Each command of a guide and the output lines the guide shows for it."""
    pairs = []
    for block in BLOCK.findall(path.read_text()):
        for line in block.splitlines():
            if line.startswith("$ "):
                pairs.append((line[2:], []))
            elif pairs:
                pairs[-1][1].append(line)
    return pairs


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_guide_runs_as_written(guide, tmp_path, local_model, request):
    history = None
    if guide.stem in ON_POSTGRES:
        from tests.postgres_server import new_database

        history = new_database(request.getfixturevalue("postgres_server"))
    ran = run_guide(guide, tmp_path, history)
    expected = shown(guide)
    assert [c for c, _, _ in ran] == [c for c, _ in expected]
    for (command, output, code), (_, lines) in zip(ran, expected, strict=True):
        assert code in (0, 1, 3), f"{guide.name}: `{command}` exited {code}:\n{output}"
        printed = [_steady(line) for line in output.splitlines()]
        assert [_steady(line) for line in lines] == printed, (
            f"{guide.name}: `{command}` prints (python tests/test_docs.py rewrites the guides):\n"
            f"{output}\n--- the guide shows:\n" + "\n".join(lines)
        )


def _steady(line: str) -> str:
    """A line as compared: its dates, times and durations stand for any, and so does the padding
    of a table column that holds one."""
    return re.sub(r" +", " ", VOLATILE.sub("<varies>", line.rstrip()))


def _rewrite(path: Path) -> None:
    import contextlib
    import tempfile

    with contextlib.ExitStack() as stack:
        history = None
        if path.stem in ON_POSTGRES:
            from tests.postgres_server import new_database, server_binaries, throwaway_cluster

            binaries = server_binaries()
            assert binaries is not None, "no PostgreSQL server here: .ci/system-packages"
            history = new_database(stack.enter_context(throwaway_cluster(binaries)))
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        ran = iter(run_guide(path, Path(folder), history))
    text = path.read_text()

    def fill(match: re.Match) -> str:
        lines = []
        for line in match.group(1).splitlines():
            if line.startswith("$ "):
                command, output, _ = next(ran)
                lines.append(line)
                lines += [o for o in output.splitlines()]
        return "```console\n" + "\n".join(lines) + "\n```"

    path.write_text(BLOCK.sub(fill, text))


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent))  # tests.postgres_server
    for guide in GUIDES:
        if len(sys.argv) < 2 or guide.stem in sys.argv[1:]:  # python tests/test_docs.py [GUIDE...]
            _rewrite(guide)
            print("rewrote", guide)


def test_readme_first_command_prints_the_table_it_shows(tmp_path, local_model):
    """The README's main job, as written: `judgekit calibrate` on the bundled criteria, live on the
    embedded local judge; every row of the table the README shows must come out."""
    import shutil

    readme = (DOCS.parent / "README.md").read_text()
    shown_table = (
        readme.split("What the first command printed here", 1)[1]
        .split("```")[1]
        .strip()
        .splitlines()
    )
    for folder in ("criteria", "calibration_sets"):
        shutil.copytree(DOCS.parent / folder, tmp_path / folder)
    done = subprocess.run(
        _shell("judgekit calibrate"),
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHONPATH": str(DOCS.parent)},
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    for line in shown_table:
        if line.startswith("report:"):
            continue
        assert line in printed, (
            f"the README shows a line the run does not print:\n{line}\n---\n{done.stdout}"
        )
