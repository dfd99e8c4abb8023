"""The version of judgekit, as its distribution (`judgekit-calibrate`) is published: the same as
pyproject.toml's (tests/test_package.py checks the two and the installed metadata agree). A plain
constant: the gate compares it with the version that wrote a report on every run, and reading the
installed metadata would scan every distribution on the path.

>>> version().count(".") >= 1
True
"""

from __future__ import annotations

DISTRIBUTION = "judgekit-calibrate"  # the name pip knows; the import package is `judgekit`
__version__ = "0.1.0"


def version() -> str:
    return __version__
