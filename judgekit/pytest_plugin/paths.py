"""Where the plugin finds the project's files: options first, then the ini file, relative to
pytest's rootdir."""

from __future__ import annotations

from pathlib import Path

import pytest


def ini_path(config: pytest.Config, option: str | None, ini: str) -> Path:
    value = Path(option or config.getini(ini))
    return value if value.is_absolute() else config.rootpath / value


def report_path(config: pytest.Config) -> Path:
    """The calibration report: --judgekit-report, else the ini's judgekit_report."""
    return ini_path(config, config.getoption("--judgekit-report"), "judgekit_report")
