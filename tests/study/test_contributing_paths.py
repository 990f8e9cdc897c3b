"""Every file docs/contributing.md names exists: a recipe that sends a contributor to a moved file is stale."""

from __future__ import annotations

import re
from pathlib import Path

from support.paths import REPO

GUIDE = REPO / "docs" / "contributing.md"
# A backticked name that looks like a file or folder of the repository: a path with a known suffix, or a
# folder ending in "/". Placeholders (<stage>, {model}, *) are patterns, not files.
NAMED_PATH = re.compile(r"`([A-Za-z0-9_./-]+(?:\.(?:py|smk|md|yaml|rst|json|toml)|/))`")
# Where a path is read from: the repository root, the package (``data/fetch.py``), the docs, the tests. A bare
# file name (``report.py``, each stage's) may also be the name of a file anywhere in the package.
ROOTS = (REPO, REPO / "workflow_scripts", REPO / "docs", REPO / "tests")
# Names of the study's outputs, not of the repository's files.
OUTPUTS = ("results/",)


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line, name) of every backticked repository path in ``text``."""
    return [(number, match.group(1)) for number, line in enumerate(text.splitlines(), start=1)
            for match in NAMED_PATH.finditer(line)]


def exists(name: str, roots: tuple[Path, ...]) -> bool:
    if name.startswith(OUTPUTS) or any((root / name).exists() for root in roots):
        return True
    return "/" not in name and next(roots[1].rglob(name), None) is not None


def missing_paths(text: str, roots: tuple[Path, ...]) -> list[str]:
    return [f"line {line}: {name}" for line, name in named_paths(text) if not exists(name, roots)]


def test_every_file_the_contributing_guide_names_exists():
    names = named_paths(GUIDE.read_text(encoding="utf-8"))
    assert len(names) > 30, "the guide names few files: has the pattern stopped matching?"
    missing = missing_paths(GUIDE.read_text(encoding="utf-8"), ROOTS)
    assert not missing, f"{GUIDE.relative_to(REPO)} names files that do not exist (moved or renamed?):\n" + \
        "\n".join(missing)


def test_a_stale_name_is_reported_with_its_line(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "real.py").write_text("")
    text = ("Intro.\nSee `pkg/real.py` and `real.py`, `results/tables/`,\nthen `pkg/gone.py`, `gone.py` and `rules/` "
            "and `workflow_scripts/<stage>/`.\n")
    assert missing_paths(text, (tmp_path, tmp_path / "pkg")) == ["line 3: pkg/gone.py", "line 3: gone.py",
                                                                 "line 3: rules/"]


# A path of the package or of the tests, named anywhere in the repository's code, docs and comments.
CODE_PATH = re.compile(r"(?<![\w/.])((?:workflow_scripts|tests|benchmarks|tools)/[A-Za-z0-9_./-]+\.(?:py|md|smk))")
TEXT_SUFFIXES = (".py", ".md", ".smk", ".yaml", ".rst", ".toml")


def test_every_path_of_the_code_named_in_the_repository_exists():
    # A comment or docstring that sends a reader to a moved or deleted file is stale (a file of the tests named in
    # the code that tests it, the module a doc describes).
    texts = [REPO / "Snakefile", REPO / "README.md",
             *(p for folder in ("workflow_scripts", "tests", "docs", "rules", "benchmarks", "tools", "report")
               for p in (REPO / folder).rglob("*") if p.suffix in TEXT_SUFFIXES)]
    stale = [f"{text.relative_to(REPO)}:{number}: {match.group(1)}"
             for text in texts for number, line in enumerate(text.read_text(encoding="utf-8").splitlines(), 1)
             for match in CODE_PATH.finditer(line) if not (REPO / match.group(1)).exists()]
    assert len(texts) > 200
    assert not stale, "files named that do not exist (moved or renamed?):\n" + "\n".join(stale)
