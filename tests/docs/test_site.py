"""The docs site works the way the README says to open it: from ``out/site/index.html``.

A real headless Chromium (``/usr/bin/chromium``, driven by Playwright) opens the built
site from ``file://``. With directory URLs, every nav link led to a directory (Chromium
shows its listing, "Index of ..."), and search needed a server. Now a nav click lands on
the page, search answers from disk, and the pages ask nothing of the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                       reason=f"{CHROMIUM} not found: install it with scripts/install-chromium.sh"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built as ``make docs`` builds it (strict), into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(out)],
        capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright  # the test extra; no browser download

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.requests = []  # every URL the page asked for
    page.errors = []
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    context.close()


def _off_disk(urls: list[str]) -> list[str]:
    return [u for u in urls if not u.startswith(("file:", "data:", "about:", "blob:"))]


def test_a_nav_click_from_file_lands_on_the_page(site, page):
    page.goto((site / "index.html").as_uri())
    page.locator("nav.md-nav--primary a.md-nav__link", has_text="Deduplicate").first.click()
    page.wait_for_load_state("load")
    assert page.url == (site / "guide" / "dedup.html").as_uri()
    assert "Index of" not in page.content()
    assert page.title().startswith("Deduplicate")
    assert page.locator("article h1").first.inner_text().startswith("Deduplicate")

    # every page the nav names is a file, not a directory (the listing Chromium showed)
    hrefs = page.eval_on_selector_all("nav.md-nav--primary a.md-nav__link[href]",
                                      "links => links.map(a => a.href)")
    pages = {h.split("#")[0] for h in hrefs if h.startswith("file:")}
    assert len(pages) > 20
    for url in pages:
        assert url.endswith(".html") and Path(url.removeprefix("file://")).is_file(), url
    assert page.errors == [] and _off_disk(page.requests) == []


def test_search_answers_from_file(site, page):
    page.goto((site / "guide" / "dedup.html").as_uri())
    page.keyboard.press("/")  # opens the search box
    page.keyboard.type("bloom", delay=20)
    results = page.locator(".md-search-result__item a")
    results.first.wait_for(timeout=10_000)
    found = results.evaluate_all("links => links.map(a => a.href)")
    assert (site / "guide" / "index.html").as_uri() in {u.split("#")[0] for u in found}
    results.first.click()
    page.wait_for_load_state("load")
    assert page.url.startswith((site / "guide" / "index.html").as_uri())
    assert page.errors == [] and _off_disk(page.requests) == []
