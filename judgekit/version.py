"""The version of judgekit installed, as its distribution says.

>>> version().count(".") >= 1 or version() == "0+unknown"
True
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

DISTRIBUTION = "judgekit"


def version() -> str:
    try:
        return _distribution_version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"
