"""Public names re-exported by a package without importing the modules that define them until one
is used: `import judgekit` (or `judgekit.report`, `judgekit.gate`) stays light, and the gate's
light path never pays for the models it does not read.

>>> getattr_, dir_ = exports("judgekit", {"canonical_hash": "judgekit.fingerprint"})
>>> getattr_("canonical_hash").__name__, dir_()
('canonical_hash', ['canonical_hash'])
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def exports(
    package: str, names: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module `__getattr__` and `__dir__` that load each name from its module on first use."""

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def dir_() -> list[str]:
        return sorted(names)

    return getattr_, dir_
