"""The report in a real browser: Debian's headless Chromium, driven by Playwright (no browser download).

The page is opened from a file, as a mailed or archived report is. The test fails on any
console error or uncaught exception, on any request but the page itself, and on a chart that
the browser did not decode or draws with no size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from scripted_batch import Filled
from services import find_chromium

from structured_agents.report import build_report


@dataclass
class Visit:
    """What the browser saw while loading a page."""

    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


Open = Callable[[Path], Visit]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless system Chromium."""
    executable = find_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def visit(browser: Browser) -> Iterator[Open]:
    """Open a file in a new page, recording its requests, console errors and page errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})

    def open_file(path: Path) -> Visit:
        page = context.new_page()
        seen = Visit(page)
        page.on("request", lambda request: seen.requests.append(request.url))
        page.on("console", lambda message: message.type == "error" and seen.errors.append(message.text))
        page.on("pageerror", lambda error: seen.errors.append(f"uncaught: {error}"))
        page.goto(path.as_uri(), wait_until="load")
        return seen

    yield open_file
    context.close()


def test_the_report_loads_nothing_logs_no_error_and_draws_its_charts(
    sqlite_filled: Filled, tmp_path: Path, visit: Open
) -> None:
    store, batch = sqlite_filled
    path = tmp_path / "report.html"
    path.write_text(build_report(store, batch.batch_id), encoding="utf-8")

    seen = visit(path)

    assert seen.errors == []
    assert seen.requests == [path.as_uri()]
    charts = seen.page.eval_on_selector_all(
        "figure.chart img",
        """images => images.map(image => {
            const box = image.getBoundingClientRect();
            return {
                complete: image.complete, natural: image.naturalWidth, width: box.width, height: box.height
            };
        })""",
    )
    assert len(charts) == 6
    for chart in charts:
        assert chart["complete"] and chart["natural"] > 0, chart  # decoded: a valid SVG document
        assert chart["width"] > 200 and chart["height"] > 100, chart

    link = seen.page.locator("#failure-reasons a").first
    target = link.get_attribute("href") or ""
    link.click()
    assert target.startswith("#run-") and seen.page.evaluate("location.hash") == target
    assert seen.page.locator(f"[id='{target[1:]}']").is_visible()
    seen.page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert seen.requests == [path.as_uri()] and seen.errors == []


def test_a_page_that_reaches_out_is_caught(sqlite_filled: Filled, tmp_path: Path, visit: Open) -> None:
    """The checks above can fail: an image from the network is refused and reported."""
    store, batch = sqlite_filled
    html = build_report(store, batch.batch_id)
    path = tmp_path / "tampered.html"
    path.write_text(
        html.replace("</main>", '<img src="http://127.0.0.1:9/pixel.png"></main>'), encoding="utf-8"
    )

    seen = visit(path)

    assert any("Content Security Policy" in error for error in seen.errors), seen.errors
