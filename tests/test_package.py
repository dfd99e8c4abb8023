"""The package as people install it: the distribution's own name (the registry's bare name is
another author's project), what every file of the repository tells people to install, the version
the command prints, and the public names `dir()` shows."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.version import DISTRIBUTION, version
from tests.conftest import REPO, require

# the registry's project of that name: never what to install (spelt apart, or this file says it)
OTHER = "judgekit"
# An install command and its arguments on the line (or on the next one, when the line ends
# after `install`).
INSTALL = re.compile(r"\b(?:pip3?|pipx|uv(?: pip)?)\s+(?:install|add)\b[ \t]*\n?([^\n;&|`)]*)")
# the name, with extras or a version
BARE = re.compile(OTHER + r"(\[[^\]]*\])?([<>=~!@;].*)?", re.IGNORECASE)
# the name with extras, anywhere
AS_DISTRIBUTION = re.compile(r"(?<![\w.-])" + OTHER + r"\[", re.IGNORECASE)


def misnamed(text: str) -> list[str]:
    """Each place in `text` that names the registry's project as the thing to install."""
    found = [
        m.group(0).strip()
        for m in INSTALL.finditer(text)
        if any(BARE.fullmatch(token.strip("'\"")) for token in m.group(1).split())
    ]
    return found + [
        text[m.start() : text.find("\n", m.start())].strip() for m in AS_DISTRIBUTION.finditer(text)
    ]


def test_misnamed_catches_every_way_of_asking_for_the_other_project():
    for wrong in (
        f"pip install {OTHER}",
        f"python -m pip install -U '{OTHER}[local]'",
        f"`pip install {OTHER}`",
        f"pip install\n{OTHER}",
        f"uv add {OTHER}>=0.1",
        f'dependencies = ["{OTHER}[plot]"]',
        f"needs {OTHER}[local])",
        f"pip3 install pytest {OTHER}",
    ):
        assert misnamed(wrong), wrong
    for right in (
        f"pip install {OTHER}-calibrate",
        f"pip install '{OTHER}-calibrate[local]'",
        f"python -m pip install -e '.[local]' && {OTHER} calibrate",
        f"pip install zstandard; {OTHER} import",
        f"the {OTHER} command",
        f"import {OTHER}",
    ):
        assert not misnamed(right), right


def test_no_file_tells_anyone_to_install_the_other_project():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    require(
        listed.returncode == 0, f"{REPO} is not a git checkout: its tracked files cannot be listed"
    )
    paths = [REPO / name for name in listed.stdout.decode().split("\0") if name]
    found, read = [], 0
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):  # binary, or deleted and not yet committed
            continue
        read += 1
        found += [f"{path.relative_to(REPO)}: {place}" for place in misnamed(text)]
    assert read > 100, f"only {read} text files read"
    assert not found, (
        "these name the registry's other project; install judgekit-calibrate:\n" + "\n".join(found)
    )


def test_the_distribution_has_a_name_of_its_own():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "judgekit-calibrate"
    # its own extras, by its name
    assert any(
        d.startswith(f"{DISTRIBUTION}[parquet,plot,")
        for d in project["optional-dependencies"]["test"]
    )
    assert project["scripts"] == {"judgekit": "judgekit.cli:main"}  # the command keeps its name


def test_version_option_prints_the_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"judgekit {version()}\n", result.output


def test_the_installed_distribution_is_this_project():
    """What `pip install -e .` (and .ci/run) leaves: importlib.metadata finds the distribution by
    its name, with the version pyproject.toml gives, the `judgekit` package and command, and
    `judgekit --version` prints that version."""
    try:
        installed = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        require(False, f"{DISTRIBUTION} is not installed here: pip install -e {REPO}")
    expected = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert installed.version == expected == version()
    assert DISTRIBUTION in metadata.packages_distributions()["judgekit"]
    assert {(e.name, e.value) for e in installed.entry_points if e.group == "console_scripts"} == {
        ("judgekit", "judgekit.cli:main")
    }
    done = subprocess.run(
        [sys.executable, "-m", "judgekit.cli", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == f"judgekit {expected}\n", (
        done.stdout + done.stderr
    )


@pytest.mark.parametrize("package", ["judgekit", "judgekit.report", "judgekit.gate"])
def test_dir_lists_the_public_names(package):
    module = importlib.import_module(package)
    assert dir(module) == sorted(module.__all__) and len(module.__all__) >= 5
    assert all(getattr(module, name) is not None for name in dir(module))  # each one loads
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        _ = module.nothing_here
