"""The snakemake command lines of the README and docs put their targets where Snakemake reads them: before
``--config`` and ``--configfile``, whose values run up to the next option (a target after them is read as one
more config entry, "Unparsable value", or as a config file)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from support.paths import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GREEDY = {"--config", "-C", "--configfile", "--configfiles"}


def snakemake_lines(path: Path) -> list[tuple[int, str]]:
    """Every command line that runs snakemake in ``path``'s code blocks and inline code, with its line number;
    a line ending in a backslash is joined with the next."""
    lines, out, joined, start = path.read_text(encoding="utf-8").splitlines(), [], "", 0
    for number, line in enumerate(lines, 1):
        if not joined:
            start = number
        joined += line.rstrip("\\").strip() + " "
        if line.rstrip().endswith("\\"):
            continue
        for command in re.findall(r"`?(snakemake\s[^`#]*)", joined):
            out.append((start, command.strip()))
        joined = ""
    return out


def words_after_greedy_option(command: str) -> list[str]:
    """The words that ``--config``/``--configfile`` take as their values (up to the next option)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    taken, greedy = [], False
    for word in words:
        if word.startswith("-"):
            greedy = word in GREEDY
        elif greedy:
            taken.append(word)
    return taken


def looks_like_target(word: str) -> bool:
    """An output path (results/..., RESULTS/..., a file with an output's extension) rather than a config
    entry (KEY=VALUE) or a config file (*.yaml)."""
    return "=" not in word and not word.endswith((".yaml", ".yml")) and (
        word.startswith(("results/", "RESULTS/")) or word.endswith((".csv", ".parquet", ".png", ".pdf", ".html")))


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_no_target_after_config_in_the_docs(doc):
    misplaced = [f"{doc.name}:{number}: {command}" for number, command in snakemake_lines(doc)
                 if any(looks_like_target(word) for word in words_after_greedy_option(command))]
    assert not misplaced, "targets must come before --config/--configfile:\n" + "\n".join(misplaced)


def test_the_check_finds_a_target_after_config():
    command = "snakemake --profile profiles/offline --config mirror=PATH results/tables/x.csv --cores 2"
    assert [w for w in words_after_greedy_option(command) if looks_like_target(w)] == ["results/tables/x.csv"]
    first = "snakemake results/tables/x.csv --profile profiles/offline --config mirror=PATH --cores 2"
    assert not [w for w in words_after_greedy_option(first) if looks_like_target(w)]
