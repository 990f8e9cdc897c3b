"""Headless Chromium for the tests that open a page the workflow writes (Debian's chromium and chromium-driver).

    apt-get install -y chromium chromium-driver      # /usr/bin/chromium, /usr/bin/chromedriver

:func:`chromium` skips the test, with the reason, where either is missing or selenium is not installed.
Every page opened gets, before any of its own scripts, a collector of uncaught errors and unhandled
rejections (``window.__errors``) and a trap that records ``alert``/``confirm``/``prompt`` calls
(``window.__dialogs``); the browser's console errors (CSP violations included) come from ``console_errors``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

COLLECTOR = """
window.__errors = [];
window.__dialogs = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)));
window.addEventListener('unhandledrejection', e => window.__errors.push('rejection: ' + String(e.reason)));
for (const name of ['alert', 'confirm', 'prompt']) {
  window[name] = (...args) => { window.__dialogs.push(name + ':' + args.join(' ')); };
}
"""


def skip_reason() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"{path} is missing (apt-get install -y {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium WebDriver with the error collector on every page; quits on exit."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="atlas-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                     f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.implicitly_wait(5)  # a page in an iframe (the report) loads after the frame element exists
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": COLLECTOR})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[str]:
    """The browser log's errors since the last call (uncaught exceptions, CSP violations, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def page_errors(driver: Any) -> list[str]:
    """Errors the page's scripts raised (the collector's) and dialogs they opened."""
    return [*driver.execute_script("return window.__errors || []"),
            *driver.execute_script("return (window.__dialogs || []).map(d => 'dialog ' + d)")]
