"""The version of judgekit installed, as its distribution (`judgekit-calibrate`) says.

>>> version().count(".") >= 1 or version() == "0+unknown"
True
"""

from __future__ import annotations

DISTRIBUTION = "judgekit-calibrate"  # the name pip knows; the import package is `judgekit`


def version() -> str:
    # importlib.metadata scans the installed distributions: loaded only when the version is asked.
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"
