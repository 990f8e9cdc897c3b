"""One folder per stage, mirrored everywhere: rules, code, entry points, docs, report captions, tests."""

from __future__ import annotations

import ast
import re

import pytest

from support.paths import REPO
from workflow_scripts.core.stages import STAGES


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_has_its_rules_code_entry_points_docs_and_tests(stage):
    for path in (f"rules/{stage}.smk", f"workflow_scripts/{stage}/__init__.py",
                 f"workflow_scripts/entrypoints/{stage}.py", f"docs/{stage}.md"):
        assert (REPO / path).is_file(), f"stage {stage!r} has no {path}"
    assert any((REPO / "tests" / stage).glob("test_*.py")), f"stage {stage!r} has no tests/{stage}/test_*.py"


def test_the_snakefile_includes_the_study_model_then_every_stage_in_order():
    # The stage list is spelled once (STAGES): the Snakefile includes rules/common.smk, then each stage's rule file
    # in a loop over STAGES; every rule file is one of those.
    text = (REPO / "Snakefile").read_text()
    assert re.findall(r'^include: "rules/(\w+)\.smk"', text, re.M) == ["common"]
    assert re.search(r'^for (\w+) in STAGES:\n\n    include: f"rules/\{\1\}\.smk"$', text, re.M)
    assert text.index('include: "rules/common.smk"') < text.index("for _stage in STAGES")
    assert sorted(p.stem for p in (REPO / "rules").glob("*.smk")) == sorted(["common", *STAGES])


def _rules(stage: str) -> list[str]:
    text = (REPO / "rules" / f"{stage}.smk").read_text()
    return re.findall(r"^\s*(?:rule|use rule \w+ as) (\w+)", text, re.M)


def _entry_points(stage: str) -> set[str]:
    tree = ast.parse((REPO / "workflow_scripts" / "entrypoints" / f"{stage}.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "entry_point" and node.args
                and isinstance(node.args[0], ast.Constant)):
            names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("stage", STAGES)
def test_every_rule_of_a_stage_runs_an_entry_point_of_the_same_stage(stage):
    missing = [rule for rule in _rules(stage) if rule not in _entry_points(stage)]
    assert not missing, f"rules of rules/{stage}.smk without an entry point in entrypoints/{stage}.py: {missing}"
    text = (REPO / "rules" / f"{stage}.smk").read_text()
    looped = re.findall(r'^\s+f"(\w+_\{_\w+\})"', text, re.M)  # rule names a loop makes: finetune_{_task}
    patterns = {name.replace("{_", "{") for name in looped}
    assert patterns <= _entry_points(stage), f"rules/{stage}.smk: no entry point for the rules named {patterns}"
    # From a rule to its code in one step: the file's first line says where its rules' functions are.
    assert text.splitlines()[0] == (f'# Each rule runs the function registered as @entry_point("<rule name>") in '
                                    f"workflow_scripts/entrypoints/{stage}.py" + (";" if looped else "."))


def test_a_rule_finds_its_entry_point_by_exact_name_only():
    from workflow_scripts.entrypoints import _import_all, find_entry_point

    _import_all()
    assert find_entry_point("finetune_cola").__name__ == "finetune"  # the pattern finetune_{task}
    assert find_entry_point("finetune_my-task_2").__name__ == "finetune"
    assert find_entry_point("finetune_metrics_table").__name__ == "finetune_metrics_table"  # its own, exactly
    assert find_entry_point("dependency_tables").__module__ == "workflow_scripts.entrypoints.syntax"
    for unknown in ("finetune_", "finetune_a.b", "dependency_tables_extra", "xfinetune_cola"):
        with pytest.raises(KeyError, match=rf"rule '{re.escape(unknown)}': no @entry_point"):
            find_entry_point(unknown)  # a whole match only: no prefix lookup


def test_report_captions_name_their_stage_and_no_rule_file_types_one():
    for caption in (REPO / "report").glob("*.rst"):
        assert caption.stem.split("_")[0] in {s.split("_")[0] for s in STAGES}, caption.name
    # A report() output's caption and category are its plan's (tests/study/test_stage_plans.py compares them).
    for smk in (REPO / "rules").glob("*.smk"):
        code = "\n".join(line for line in smk.read_text().splitlines() if not line.lstrip().startswith("#"))
        typed = re.findall(r"\breport\(|\b(?:caption|category|subcategory)=\s*[\"']", code)
        assert not typed, f"rules/{smk.name} types {typed}: ask the stage's plan (STUDY.<stage>.report_table, ...)"


TYPED_FIGURE = r"(?:report_figure|figure_file)\(\s*[\"'f]|\bpaths\.figure\("


def test_no_rule_file_types_a_figure_name():
    # A figure is named once, in its plan (a constant its rule file imports), and its files are the plan's.
    for typed in ('STUDY.surface.report_figure("entropy")', 'STUDY.surface.figure_file("entropy", "pdf")',
                  'STUDY.paths.figure("surface", "entropy", "pdf")'):
        assert re.findall(TYPED_FIGURE, typed), typed
    assert not re.findall(TYPED_FIGURE, 'STUDY.surface.figure_file(ENTROPY_FIGURE, "pdf")')
    for smk in (REPO / "rules").glob("*.smk"):
        typed = re.findall(TYPED_FIGURE, smk.read_text())
        assert not typed, f"rules/{smk.name} types {typed}: use the plan's constant and STUDY.<stage>.figure_file"


def test_rule_files_read_the_study_model_and_never_each_others_names():
    """A name defined at the top of one .smk (a function or a constant) is never used in another."""
    defined = {}
    for smk in (REPO / "rules").glob("*.smk"):
        for name in re.findall(r"^(?:def (\w+)|([A-Z_][A-Z0-9_]*) =)", smk.read_text(), re.M):
            defined[name[0] or name[1]] = smk.stem
    shared = {"STUDY"}  # built once in common.smk and read by every rule file (so is TABLE, an import, not matched)
    for smk in (REPO / "rules").glob("*.smk"):
        text = smk.read_text()
        for name, home in defined.items():
            if home != smk.stem and name not in shared and re.search(rf"\b{name}\b", text):
                pytest.fail(f"rules/{smk.name} uses {name}, defined in rules/{home}.smk")


def test_every_rule_logs_and_declares_threads_resources_and_its_env():
    """A rule block (named, or the per-task fine-tuning rules) has log:, threads:, resources:, conda:, script:."""
    for smk in (REPO / "rules").glob("*.smk"):
        for block in re.split(r"^(?=rule \w+:|[ \t]+rule:)", smk.read_text(), flags=re.M)[1:]:
            name = re.match(r"\s*rule ?(\w*)", block).group(1) or "rule: (anonymous)"
            missing = [d for d in ("log:", "threads:", "resources:", "conda:", "script:") if d not in block]
            assert not missing, f"rules/{smk.name}, rule {name}: no {', '.join(missing)}"
