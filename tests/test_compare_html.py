"""compare.html: hostile names, reasons and ids shown as text and never run, nothing fetched, the
grid in the examples' order with each verdict marked against its label, bounded for big
comparisons; and the same page as a person sees it in headless Chromium."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from html import escape
from html.parser import HTMLParser

from judgekit.cli.compare_html import page, write
from judgekit.compare.model import (
    Candidate,
    ComparedExample,
    Comparison,
    Cost,
    Paired,
    Recommendation,
    Setting,
)

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
ENTITY = "x &amp; y"  # shown as typed: "&amp;" on screen, "&amp;amp;" in the source
XSS = '<img src=x onerror="window.__xss=1">'
HOSTILE = (SCRIPT, BREAKOUT, ENTITY, XSS)
COSTS = (0.5, 1.5, 2.5, None, 0.0005)  # per 1,000 verdicts; None: no price known
MARKS = {"right": "✓", "wrong": "✗", "abstained": "–"}


def _paired(other: str, rng: random.Random) -> Paired:
    verdict = rng.choice(["better", "worse", "indistinguishable"])
    return Paired(
        other=other,
        only_this_right=rng.randint(0, 9),
        only_other_right=rng.randint(0, 9),
        p=0.04,
        p_adjusted=0.2,
        deltas={k: (0.05, -0.1, 0.2) for k in ("tpr", "tnr", "cohen_kappa")},
        verdict=verdict,
        examples_to_separate=340 if verdict == "indistinguishable" else None,
    )


def comparison(
    candidates: int = 6, examples: int = 14, hostile: bool = True, passes: bool = True
) -> Comparison:
    """A hand-made comparison: random verdicts, labels alternating, the separating examples first;
    judge-0 the baseline, the second candidate the best, the third recommended (or closest)."""
    rng = random.Random(candidates * 7919 + examples)
    names = [f"judge-{j}" for j in range(candidates)]
    ids = [f"ex-{i:04d}" for i in range(examples)]
    if hostile:
        names[1 : 1 + len(HOSTILE)] = HOSTILE
        ids[: len(HOSTILE)] = [f"{h} #{i}" for i, h in enumerate(HOSTILE)]
    # Every third example gets one verdict from all: it does not separate them.
    columns = [
        [rng.choice("pf")] * len(names)
        if i % 3 == 0
        else rng.choices("pf-", weights=(45, 45, 10), k=len(names))
        for i in range(examples)
    ]
    grids = ["".join(column[j] for column in columns) for j in range(len(names))]
    separates = [len({g[i] for g in grids}) > 1 for i in range(examples)]
    order = sorted(range(examples), key=lambda i: (not separates[i], rng.random()))
    grids = ["".join(g[i] for i in order) for g in grids]
    baseline, best, chosen = names[0], names[1], names[2]
    made = []
    for j, (name, grid) in enumerate(zip(names, grids, strict=True)):
        low = rng.uniform(0.2, 0.6)
        made.append(
            Candidate(
                name=name,
                setting=Setting(model=f"openai/{name}", trials=3),
                source="live",
                n=examples,
                abstained=grid.count("-"),
                confusion={"tp": 1, "fp": 1, "tn": 1, "fn": 1},
                metrics={"tpr": 0.9, "tnr": 0.8, "cohen_kappa": low + 0.1},
                intervals={"tpr": (0.8, 0.95), "tnr": (0.7, 0.9), "cohen_kappa": (low, low + 0.2)},
                flip_rate=0.02,
                gate="PASS" if passes and name == chosen else "FAIL",
                gate_reasons=[f"kappa lower bound below 0.6 for {name}"],
                grid=grid,
                cost=Cost(
                    calls=examples,
                    per_1000_verdicts=COSTS[j] if j < len(COSTS) else j + 0.5,
                    latency_p50_s=0.8,
                    latency_p95_s=2.1,
                ),
                vs_best=None if name == best else _paired(best, rng),
                vs_baseline=None if name == baseline else _paired(baseline, rng),
            )
        )
    recommendation = (
        Recommendation(
            candidate=chosen,
            why=f"the cheapest the gate passes ({chosen})",
            front=[names[0], chosen],
        )
        if passes
        else Recommendation(
            candidate=None,
            # as judgekit.compare.analysis words it
            why=f"no candidate passes the gate; the closest is {chosen} (FAIL)",
            front=[names[0]],
            closest=chosen,
            blocked_by=[f"kappa's lower bound is below 0.6 ({chosen})"],
        )
    )
    return Comparison(
        created_at=datetime(2026, 5, 4, 3, 2, tzinfo=UTC),
        criterion="says-blocked",
        set="support.jsonl",
        labelled_pass=sum(i % 2 == 0 for i in order),
        labelled_fail=sum(i % 2 for i in order),
        baseline=baseline,
        best=best,
        candidates=made,
        recommendation=recommendation,
        examples=[
            ComparedExample(id=ids[i], label=i % 2 == 0, separates=separates[i]) for i in order
        ],
    )


def expected_marks(c: Comparison, candidates: list[Candidate]) -> list[list[str]]:
    return [
        [
            "abstained"
            if k.grid[i] == "-"
            else "right"
            if (k.grid[i] == "p") == e.label
            else "wrong"
            for k in candidates
        ]
        for i, e in enumerate(c.examples)
    ]


class Parsed(HTMLParser):
    """The page as a parser reads it: every tag and attribute, and each table's rows
    as (class, text) cells."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.tables: dict[str, list[list[tuple[str, str]]]] = {}
        self._table: str | None = None
        self._cell = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}
        css = dict(attrs).get("class") or ""
        if tag == "table":
            self._table = css
            self.tables[css] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self.tables[self._table][-1].append((css, ""))
            self._cell = True

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("td", "th"):
            self._cell = False

    def handle_data(self, data):
        if self._cell:
            css, text = self.tables[self._table][-1][-1]
            self.tables[self._table][-1][-1] = (css, text + data)


def test_every_hostile_text_is_escaped_and_never_raw():
    c = comparison()
    text = page(c)
    for hostile in HOSTILE:
        assert hostile not in text
        assert escape(hostile) in text
    # Each kind of place: a name (table, grid, front), a gate reason, an example id,
    # what blocks the closest.
    assert text.count(escape(XSS)) >= 4
    assert escape(f"kappa lower bound below 0.6 for {XSS}") in text and escape(f"{XSS} #3") in text
    blocked = page(comparison(passes=False))
    assert escape(f"({BREAKOUT})") in blocked and f"({BREAKOUT})" not in blocked
    parsed = Parsed(text)
    assert {"script", "img"} & parsed.tags == set()
    assert {"onerror", "src"} & parsed.attributes == set()


def test_the_page_references_nothing_on_the_network():
    text = page(comparison())
    assert "http://" not in text and "https://" not in text
    assert "url(" not in text and "@import" not in text
    parsed = Parsed(text)
    assert (
        parsed.tags
        & {"script", "link", "img", "iframe", "object", "embed", "base", "svg", "video", "audio"}
        == set()
    )
    assert (
        parsed.attributes
        & {"src", "href", "srcset", "action", "formaction", "poster", "data", "xlink:href"}
        == set()
    )
    assert "default-src 'none'" in text  # and the browser enforces it (test below)


def test_the_grid_follows_the_examples_order_and_marks_each_verdict_against_its_label():
    c = comparison(candidates=7, examples=30)
    # the order is the examples', not ids'
    assert [e.id for e in c.examples] != sorted(e.id for e in c.examples)
    head, *rows = Parsed(page(c)).tables["grid"]
    assert [text for _, text in head] == ["example", "label"] + [k.name for k in c.candidates]
    assert [row[0][1] for row in rows] == [e.id for e in c.examples]
    assert [row[1][1] for row in rows] == ["pass" if e.label else "fail" for e in c.examples]
    marks = expected_marks(c, c.candidates)
    assert [[css for css, _ in row[2:]] for row in rows] == marks
    assert [[text for _, text in row[2:]] for row in rows] == [
        [MARKS[m] for m in row] for row in marks
    ]
    assert {"right", "wrong", "abstained"} <= {m for row in marks for m in row}
    separating = sum(e.separates for e in c.examples)
    assert 0 < separating < len(c.examples)
    assert f"{separating:,} of {len(c.examples):,} examples separate the candidates" in page(c)


def test_a_big_comparison_keeps_the_grid_bounded_and_says_what_it_left_out():
    small = page(comparison())
    assert "Showing" not in small and "left out" not in small
    c = comparison(candidates=1000, examples=1000)
    text = page(c)
    assert (
        "Showing 200 of 1,000 examples and 60 of 1,000 candidates" in text
        and "left out: 800 examples and 940 candidates. compare.json holds them all." in text
    )
    tables = Parsed(text).tables
    head, *rows = tables["grid"]
    assert len(rows) == 200 and len(head) == 2 + 60
    assert [row[0][1] for row in rows] == [e.id for e in c.examples[:200]]
    shown = [text for _, text in head[2:]]
    r = c.recommendation
    assert {c.best, c.baseline, r.candidate, *r.front} <= set(shown)
    assert shown == [k.name for k in c.candidates if k.name in set(shown)]  # in the table's order
    assert len(tables["candidates"]) == 1 + 1000  # the table lists every candidate
    assert len(text) < 4_000_000


def test_the_page_is_built_well_under_a_second():
    c = comparison(candidates=65, examples=100)
    start = time.perf_counter()
    page(c)
    assert time.perf_counter() - start < 0.25


def test_the_recommendation_or_what_blocks_the_closest_comes_first():
    text = page(comparison())
    assert "Use <b>" + escape(BREAKOUT) + "</b> — the cheapest the gate passes" in text
    assert text.index('id="recommendation"') < text.index('class="candidates"')
    blocked = page(comparison(passes=False))
    assert (
        f"No candidate passes the gate; the closest is <b>{escape(BREAKOUT)}</b>, blocked by: "
        f"kappa&#x27;s lower bound is below 0.6" in blocked
    )
    assert blocked.index("No candidate passes") < blocked.index('class="candidates"')
    # issue 33, item 21: the banner said its sentence twice
    banner = blocked[blocked.index('id="recommendation"') :].split("</p>")[0]
    assert banner.lower().count("no candidate passes the gate") == 1, banner
    head, *rows = Parsed(text).tables["candidates"]
    cost = [h for h, (_, t) in enumerate(head) if t == "cost per 1,000 verdicts"][0]
    assert [row[cost][1] for row in rows] == [
        "$0.50",
        "$1.50",
        "$2.50",
        "unknown",
        "$0.0005",
        "$5.50",
    ]
    assert "says-blocked" in text and "support.jsonl" in text and "2026-05-04 03:02 UTC" in text


def test_write_puts_compare_html_in_the_directory_whole(tmp_path):
    c = comparison()
    path = write(c, tmp_path / "out")
    assert path == tmp_path / "out" / "compare.html"
    assert path.read_text(encoding="utf-8") == page(c)
    # no temporary file left behind
    assert [p.name for p in path.parent.iterdir()] == ["compare.html"]


# Installed before the page loads (CDP scripts are not subject to the page's policy): records every
# request the page's policy blocked, so "nothing fetched" also covers what was tried and refused.
PROBE = (
    "window.__blocked = []; document.addEventListener('securitypolicyviolation', "
    "e => window.__blocked.push(e.blockedURI + ' ' + e.effectiveDirective), true);"
)
FETCHED = "return performance.getEntriesByType('resource').map(e => e.name)"


def _load(browser, path):
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE})
    browser.get(path.as_uri())


def test_in_chromium_nothing_runs_nothing_is_fetched_and_the_grid_reads_right(tmp_path, browser):
    c = comparison(candidates=7, examples=30)
    _load(browser, write(c, tmp_path))
    assert browser.execute_script("return window.__xss") is None
    assert (
        browser.execute_script(
            "return document.querySelectorAll('script, img, iframe, object, embed').length"
        )
        == 0
    )
    assert (
        browser.execute_script(FETCHED) == []
        and browser.execute_script("return window.__blocked") == []
    )
    text = browser.find_element("tag name", "body").text
    assert SCRIPT in text and ENTITY in text and XSS in text  # shown as text, as typed
    names = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.candidates tbody tr'))"
        ".map(r => r.querySelector('.name').textContent)"
    )
    assert names == [k.name for k in c.candidates]
    grid = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.grid tbody tr'))"
        ".map(r => Array.from(r.cells).map(x => [x.className, x.textContent]))"
    )
    assert [row[0][1] for row in grid] == [e.id for e in c.examples]
    marks = expected_marks(c, c.candidates)
    assert [[cell[0] for cell in row[2:]] for row in grid] == marks
    assert [[cell[1] for cell in row[2:]] for row in grid] == [
        [MARKS[m] for m in row] for row in marks
    ]
    heads = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.grid th.cand')).map(h => h.textContent)"
    )
    assert heads == [k.name for k in c.candidates]


def test_the_browser_checks_can_fail(tmp_path, browser):
    """The probes see what they guard against: an unescaped handler runs, and a
    blocked request is seen."""
    raw = tmp_path / "raw.html"
    raw.write_text(f"<!doctype html><html><body>{XSS}</body></html>")
    _load(browser, raw)
    browser.execute_script("return 1")  # let the image's error fire
    assert browser.execute_script("return window.__xss") == 1
    guarded = tmp_path / "guarded.html"
    guarded.write_text(page(comparison()).replace(escape(XSS), XSS, 1))
    browser.get(guarded.as_uri())
    assert browser.execute_script("return window.__xss") is None  # the policy holds even so...
    # ...and the attempt is seen
    assert browser.execute_script("return window.__blocked.length") > 0


CONTRAST = """
function rgb(s) { return s.match(/[\\d.]+/g).map(Number); }
function background(el) {
  for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c; }
  return [255, 255, 255];
}
function lum(c) { return c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 :
  Math.pow((v + 0.055) / 1.055, 2.4); })
  .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0); }
return Array.from(document.querySelectorAll(arguments[0])).map(el => {
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); });
"""
READ = (
    "body, .recommend, .meta, table.candidates th, table.candidates td, .small, "
    "td.right, td.wrong, td.abstained, table.grid th"
)


def test_the_page_reads_in_light_and_dark_and_prints_the_whole_grid(tmp_path, browser):
    _load(browser, write(comparison(), tmp_path))
    seen = {}
    for scheme in ("light", "dark"):
        browser.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
        )
        ratios = browser.execute_script(CONTRAST, READ)
        assert len(ratios) > 100 and min(ratios) >= 4.5, (scheme, min(ratios))
        seen[scheme] = browser.execute_script(
            "return getComputedStyle(document.body).backgroundColor"
        )
    assert seen["light"] != seen["dark"]  # the dark scheme is its own, not the light one read twice
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print", "features": []})
    assert (
        browser.execute_script(
            "return getComputedStyle(document.querySelector('#grid .gridwrap')).overflow"
        )
        == "visible"
    )
