"""Each rule's code digest (workflow_scripts/runtime/code_digest.py), on a tiny package the test writes: what changes
it and what does not."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from workflow_scripts.runtime import code_digest


def _write(root: Path, files: dict[str, str]) -> None:
    """``files``: path under the package's folder -> text."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


PACKAGE = {
    "__init__.py": "",
    "entrypoints/__init__.py": '''
        def entry_point(rule):
            return lambda f: f
        ''',
    "entrypoints/stage.py": '''
        """Entry points of a stage."""
        from . import entry_point

        LIMIT = 3


        @entry_point("scores")
        def scores(smk):
            from ..science.scoring import score

            score(smk, LIMIT)


        @entry_point("tables")
        def tables(smk):
            from ..science import tabling

            tabling.table(smk)


        @entry_point("finetune_{task}")
        def finetune(smk):
            pass
        ''',
    "science/__init__.py": "",
    "science/scoring.py": '''
        """Scores."""
        from .common import clip


        def score(smk, limit):
            """Score each head."""
            return clip(limit)  # at most the limit
        ''',
    "science/common.py": "def clip(x):\n    return min(x, 1)\n",
    "science/tabling.py": "def table(smk):\n    return smk\n",
}


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "workflow_scripts"
    _write(root, PACKAGE)
    monkeypatch.setattr(code_digest, "PACKAGE_DIR", root)
    monkeypatch.setattr(code_digest, "ENTRY_POINTS", root / "entrypoints")
    monkeypatch.setattr(code_digest, "CACHE", root / "__pycache__" / "code_digests.json")
    return root


RULES = ["scores", "tables", "finetune_cola", "finetune_sst2", "all"]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_every_rule_with_an_entry_point_gets_a_digest_patterns_included(package):
    digests = code_digest.rule_digests(RULES)
    assert set(digests) == {"scores", "tables", "finetune_cola", "finetune_sst2"}  # 'all' runs no entry point
    assert digests["finetune_cola"] == digests["finetune_sst2"] and len(set(digests.values())) == 3


def test_comments_docstrings_and_blank_lines_change_nothing(package):
    before = code_digest.rule_digests(RULES)
    _edit(package / "science" / "scoring.py", '"""Score each head."""', '"""Score every head, reworded."""\n\n')
    _edit(package / "science" / "scoring.py", "# at most the limit", "# clipped")
    _edit(package / "entrypoints" / "stage.py", '"""Entry points of a stage."""', "# the stage's entry points")
    assert code_digest.rule_digests(RULES) == before


def test_a_change_in_a_module_changes_the_rules_whose_entry_point_reaches_it_only(package):
    before = code_digest.rule_digests(RULES)
    _edit(package / "science" / "common.py", "min(x, 1)", "min(x, 2)")  # reached through scoring.py's import
    after = code_digest.rule_digests(RULES)
    assert after["scores"] != before["scores"]
    assert {r: after[r] for r in after if r != "scores"} == {r: before[r] for r in before if r != "scores"}


def test_an_entry_points_own_body_changes_its_rule_and_a_shared_constant_every_rule_of_the_module(package):
    before = code_digest.rule_digests(RULES)
    _edit(package / "entrypoints" / "stage.py", "tabling.table(smk)", "tabling.table(smk.output)")
    after = code_digest.rule_digests(RULES)
    assert after["tables"] != before["tables"] and after["scores"] == before["scores"]
    _edit(package / "entrypoints" / "stage.py", "LIMIT = 3", "LIMIT = 4")
    shared = code_digest.rule_digests(RULES)
    assert all(shared[r] != after[r] for r in shared)


def test_how_a_job_starts_is_left_out(package):
    before = code_digest.rule_digests(RULES)
    _edit(package / "entrypoints" / "__init__.py", "return lambda f: f", "return lambda function: function")
    assert code_digest.rule_digests(RULES) == before


def test_unchanged_modules_are_read_from_the_cache(package, monkeypatch):
    before = code_digest.rule_digests(RULES)
    assert code_digest.CACHE.is_file()

    def no_parse(*args, **kwargs):
        raise AssertionError("a module was parsed again though its file did not change")

    monkeypatch.setattr(ast, "parse", no_parse)
    assert code_digest.rule_digests(RULES) == before


def test_the_workflows_own_rules_all_have_a_digest():
    """Every rule of the workflow that runs an entry point gets one (the Snakefile sets it as the ``code_digest``
    param): the registry read statically matches the one the jobs use."""
    from workflow_scripts import entrypoints

    entrypoints._import_all()
    names = [name.replace("{task}", "cola") for name in entrypoints.ENTRY_POINTS]
    assert set(code_digest.rule_digests(names)) == set(names)
