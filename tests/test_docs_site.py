"""The docs site (issue 36, item 5): docs/ built by MkDocs strictly (a warning, such as a broken
link or a guide left out of the navigation, fails the build), then its home page and a guide opened
in a real browser, each rendered with what a reader needs and nothing fetched from elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert built.returncode == 0, built.stderr
    return out


def test_every_guide_is_in_the_site_s_navigation(site):
    """A guide or a reference page added to docs/ and not to mkdocs.yml's nav is a strict build's
    warning (the build above would fail); each is a page of the site."""
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "index.md")
    assert len(pages) > 20
    for page in pages:
        assert (site / page.relative_to(ROOT / "docs").with_suffix("") / "index.html").is_file()


def _kept(shot: Path) -> Path:
    """What a reader sees, kept by CI (JUDGEKIT_ARTIFACTS), as report.html's screenshot is."""
    if os.environ.get("JUDGEKIT_ARTIFACTS"):
        kept = Path(os.environ["JUDGEKIT_ARTIFACTS"]) / f"docs-{shot.name}"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, kept)
    return shot


def test_the_home_page_and_a_guide_render_in_a_browser(site, browser, tmp_path):
    browser.get((site / "index.html").as_uri())
    assert browser.find_element("tag name", "h1").text == "judgekit"
    body = browser.find_element("tag name", "body").text
    assert "pip install -e '.[local]' && judgekit calibrate" in body
    links = {a.text for a in browser.find_elements("css selector", "article a")}
    assert {"Calibrate a judge before a release", "Judged tests in pytest"} <= links
    assert browser.save_screenshot(str(tmp_path / "home.png"))
    assert _kept(tmp_path / "home.png").stat().st_size > 10_000  # not a blank page
    # nothing fetched from another host: the site reads offline
    remote = browser.execute_script(
        "return performance.getEntriesByType('resource')"
        ".map(e => e.name).filter(n => !n.startsWith('file:'))"
    )
    assert remote == []
    browser.get((site / "pytest" / "index.html").as_uri())
    assert browser.find_element("tag name", "h1").text == "Judged tests in pytest"
    blocks = browser.find_elements("css selector", "article pre")
    assert blocks and "judgekit init" in blocks[0].text
    assert browser.save_screenshot(str(tmp_path / "pytest.png"))
    assert _kept(tmp_path / "pytest.png").stat().st_size > 10_000
