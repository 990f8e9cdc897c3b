"""The few lines a successful run ends with: where the explorer pages are, and how to build the report.

The report command must name the same study as the run: the same ``--profile`` (the offline one
carries a configfile), ``--configfile`` and ``--config``, and the same ``--snakefile`` and
``--directory``, since relative paths are the working directory's. It is rebuilt from the run's own
command line, which keeps the user's quoting of values such as ``--config attention='{...}'``; the
options that do not change what the report shows (``--cores``, targets, ``--keep-going``, ...) are left
out. The workflow profile (profiles/default) needs no option: Snakemake loads it for ``--report`` too.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Options that change the study or where it is, and how many values each takes (None: one or more).
REPORT_OPTIONS: dict[str, int | None] = {
    "--profile": 1, "--workflow-profile": 1, "--configfile": None, "--configfiles": None,
    "--config": None, "-C": None, "--directory": 1, "-d": 1, "--snakefile": 1, "-s": 1,
}
# The rule whose outputs are the whole study (the Snakefile's default target).
STUDY_RULE = "all"
# Past this many pages the message names their folder and count instead of each file.
MAX_PAGES_LISTED = 6


def report_command(argv: Sequence[str]) -> str:
    """``snakemake --report report.html`` and the options of ``argv`` (a Snakemake command line) that
    choose the study."""
    words = ["snakemake", "--report", "report.html"]
    left: int | None = 0  # values still to take for the last kept option (None: until the next option)
    for arg in argv[1:]:
        if arg.startswith("-") and len(arg) > 1:
            name, eq, _ = arg.partition("=")
            left = REPORT_OPTIONS.get(name, 0)
            if name in REPORT_OPTIONS:
                words.append(arg)
            if eq:
                left = 0
            continue
        if left is None or left > 0:
            words.append(arg)
            if left is not None:
                left -= 1
    return shlex.join(words)


# The explorer's index page (explorer/index.py): every model's page, linked.
EXPLORER_INDEX = "_index.html"


def explorer_pages(results: str | os.PathLike[str]) -> list[str]:
    """The models' explorer pages (not the index)."""
    return sorted(str(p) for p in Path(results, "explorer").glob("*.html") if p.name != EXPLORER_INDEX)


def built_the_study(workflow: Any) -> bool:
    """Whether this run's targets were the whole study (not single files or rules)."""
    rules = getattr(getattr(workflow, "dag", None), "targetrules", None) or ()
    return any(getattr(rule, "name", None) == STUDY_RULE for rule in rules)


def closing_message(results: str | os.PathLike[str], argv: Sequence[str], warnings: Sequence[str] = ()) -> str:
    """Where the explorer pages are and the report command, after ``warnings``: what the study built but should not
    be read as a finding (a fine-tuning run at chance; the Snakefile's onsuccess gathers them)."""
    pages = explorer_pages(results)
    index = Path(results, "explorer", EXPLORER_INDEX)
    lines = [*warnings]
    if len(pages) > MAX_PAGES_LISTED:
        lines.append(f"Head explorer: {len(pages)} pages in {Path(results, 'explorer')}/ (open one in a browser"
                     + (f"; {index} lists them all)" if index.exists() else ")"))
    elif pages:
        lines.append("Head explorer (open a page in a browser):")
        lines += [f"  {page}" for page in pages]
        if index.exists():
            lines.append(f"  {index}  (the atlas: every model's heads by role and checkpoint, and role agreement)")
    lines.append("Report (every figure and table in one HTML file):")
    lines.append(f"  {report_command(argv)}")
    return "\n".join(lines)


def on_success(workflow: Any, results: str | os.PathLike[str], argv: Sequence[str],
               warnings: Sequence[str] = ()) -> str:
    """The ``onsuccess:`` text: the closing message after a run of the whole study, '' otherwise.

    A run of single targets ends with nothing: its outputs are what the user asked for by name, and a
    report or explorer of a study not built yet would show stale or missing parts.
    """
    return closing_message(results, argv, warnings) if built_the_study(workflow) else ""
