"""Open a Snakemake report in headless Chromium and check every result in it.

    pip install playwright            # the Python driver only; it uses the system's Chromium
    apt-get install chromium          # Debian's package: /usr/bin/chromium
    snakemake --report report.html --profile profiles/offline --config mirror=PATH
    python tools/check_report.py report.html --screenshots shots/

For every category and every file in it, the check clicks the file's view button and its caption
button: an image must load (non-zero natural size), a page shown inline (the head explorer's HTML)
must load in its frame with some text, any other file (CSV tables) must download under its own
name, a caption must be rendered (no leftover Jinja braces), and the page must log no JavaScript
error. Screenshots of the landing page and of every summary figure go to
--screenshots. The exit status is 1 when anything is broken, and each broken item is printed.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Item:
    category: str
    file: str
    problems: list[str] = field(default_factory=list)
    shown: str = ""


# The report's left sidebar is the outermost <nav> (it holds a breadcrumb <nav> of its own): the category
# links and, once a category is open, its file table live there. Every locator is scoped to it, because the
# landing page and the captions repeat the same words (an <em>Attention</em> beside the category "Attention").
SIDEBAR = "nav:not(nav nav)"
# The result categories: the links listed after the sidebar's "Results" heading (General's links come before it).
CATEGORY_LINKS = 'li:text-is("Results") ~ li a'


def _open(page, url: str, category: str | None = None):
    """Load the report afresh (optionally opening one category) and return its sidebar."""
    page.goto(url)
    sidebar = page.locator(SIDEBAR)
    sidebar.get_by_text("Results", exact=True).wait_for(timeout=30_000)
    if category is not None:
        sidebar.locator(CATEGORY_LINKS).get_by_text(category, exact=True).click()
        sidebar.get_by_role("columnheader", name="File", exact=True).wait_for(timeout=10_000)
    return sidebar


def _row(sidebar, name: str):
    """The file table's row of one file: its first cell is exactly the name (a has_text match would also take
    a row whose name merely contains this one)."""
    return sidebar.locator("tbody tr").filter(has=sidebar.page.get_by_role("cell", name=name, exact=True))


def check_report(report: Path, screenshots: Path | None, chromium: str) -> list[Item]:
    from playwright.sync_api import sync_playwright

    url = report.resolve().as_uri()
    items: list[Item] = []
    errors: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium,
                                         args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(viewport={"width": 1600, "height": 1100}, accept_downloads=True)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("console", lambda m: errors.append(f"console error: {m.text}") if m.type == "error" else None)
        sidebar = _open(page, url)
        if screenshots:
            screenshots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshots / "landing.png"))
        categories = [link.inner_text().strip() for link in sidebar.locator(CATEGORY_LINKS).all()]
        for category in categories:
            sidebar = _open(page, url, category)
            files = [row.locator("td").first.inner_text().strip() for row in sidebar.locator("tbody tr").all()]
            for name in (f for f in files if f):
                item = Item(category, name)
                items.append(item)
                row = _row(_open(page, url, category), name)
                if name.lower().endswith((".png", ".svg", ".jpg", ".jpeg")):
                    row.locator("a[iconname=eye]").click()
                    page.wait_for_timeout(800)
                    sizes = page.eval_on_selector_all(
                        "img", "els => els.filter(e => !e.src.includes('logo.svg')).map(e => e.naturalWidth)")
                    if not sizes or min(sizes) == 0:
                        item.problems.append(f"image not shown (natural widths {sizes})")
                    item.shown = f"image {max(sizes) if sizes else 0} px wide"
                    if screenshots and "/summary/" in name:
                        page.screenshot(path=str(screenshots / f"{Path(name).stem}.png"))
                elif row.locator("a[iconname=eye]").get_attribute("download") is None:
                    # A page the report shows inline (the head explorer's .html): Snakemake puts it in an
                    # <iframe> of its data: URL, so it is never downloaded; it must load with a body.
                    row.locator("a[iconname=eye]").click()
                    frame = page.locator(f'iframe[src*="filename={Path(name).name};"]')
                    frame.wait_for(timeout=10_000)
                    body = frame.content_frame.locator("body").inner_text(timeout=10_000)
                    if not body.strip():
                        item.problems.append("page shown empty")
                    item.shown = f"page {len(body)} characters"
                else:
                    with page.expect_download(timeout=10_000) as download:
                        row.locator("a[iconname=eye]").click()
                    got = download.value.suggested_filename
                    if got != Path(name).name:
                        item.problems.append(f"download named {got!r}")
                    item.shown = f"download {got}"
                _row(_open(page, url, category), name).locator("a[iconname=information-circle]").click()
                page.wait_for_timeout(400)
                text = page.inner_text("body")
                if "{{" in text or "}}" in text or "{%" in text:
                    item.problems.append("caption has unrendered template code")
        browser.close()
    if errors:
        items.append(Item("(page)", "(javascript)", problems=errors))
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="the report.html that snakemake --report wrote")
    parser.add_argument("--screenshots", type=Path, default=None, help="folder for the screenshots")
    parser.add_argument("--chromium", default="/usr/bin/chromium",
                        help="the Chromium binary (Debian: /usr/bin/chromium)")
    args = parser.parse_args(argv)
    if not args.report.is_file():
        parser.error(f"{args.report}: no such report; build it with snakemake --report {args.report}")
    items = check_report(args.report, args.screenshots, args.chromium)
    broken = [i for i in items if i.problems]
    for item in items:
        status = "BROKEN " + "; ".join(item.problems) if item.problems else "ok"
        print(f"{item.category:28} {item.file:75} {item.shown:28} {status}")
    print(f"{len(items) - len(broken)} of {len(items)} results ok")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
