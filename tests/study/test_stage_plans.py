"""One plan per stage (workflow_scripts/study/plans/): run in the order of STAGES, each declaring its analyses;
rule all, the explorer and the report read the declarations."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from docutils.core import publish_parts
from jinja2 import Environment

from support.paths import REPO
from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.core.stages import STAGES
from workflow_scripts.study.plans import explorer, stage_plans, surface
from workflow_scripts.study.plans.declarations import stacked_table_caption, stacked_tables
from workflow_scripts.surface.measures import HEAD_MEASURES

STAGE_PLANS = stage_plans()


def test_one_plan_per_stage_in_the_order_of_the_stages():
    assert [plan.STAGE for plan in STAGE_PLANS] == list(STAGES)
    for plan in STAGE_PLANS:
        assert plan.__name__.rsplit(".", 1)[-1] == plan.STAGE
        assert callable(plan.plan)


def test_every_analysis_declares_one_caption_per_output_in_their_order_each_naming_its_stage():
    for plan in STAGE_PLANS:
        for analysis in plan.ANALYSES:
            outputs = len(analysis.tables) + len(analysis.figures) + len(analysis.pages)
            assert len(analysis.captions) == outputs, (plan.STAGE, analysis.name)
            for caption in analysis.captions:
                assert (REPO / "report" / caption).is_file(), f"{plan.STAGE}: {caption} is not under report/"
                assert caption.startswith(plan.STAGE), f"{plan.STAGE}: {caption} does not name its stage"


# The report() outputs of every rule, as Snakemake reads the rule files (a subprocess, as `snakemake` itself would):
# path (wildcard constraints left out), caption file, category, and subcategory ("per table" where it is a function).
RULE_REPORTS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.io import is_flagged, strip_wildcard_constraints
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

snakefile, workdir = sys.argv[1:]
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path(snakefile),
                            workdir=Path(workdir), config_settings=ConfigSettings(config={"results": "R"}))._workflow
    reports = []
    for rule in workflow.rules:
        for output in rule.output:
            if is_flagged(output, "report"):
                entry = output.flags["report"]
                sub = entry.subcategory if entry.subcategory is None or isinstance(entry.subcategory, str) else (
                    "per table")
                reports.append([strip_wildcard_constraints(str(output)), Path(str(entry.caption)).name,
                                entry.category, sub])
print("REPORTS " + json.dumps(reports))
"""


@pytest.fixture(scope="module")
def rule_reports(tmp_path_factory) -> set[tuple]:
    import json
    import os
    import subprocess
    import sys

    workdir = tmp_path_factory.mktemp("rules")
    result = subprocess.run([sys.executable, "-c", RULE_REPORTS, str(REPO / "Snakefile"), str(workdir)], cwd=workdir,
                            capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("REPORTS "))
    return {tuple(entry) for entry in json.loads(line.removeprefix("REPORTS "))}


def _declared_reports() -> set[tuple]:
    """Every report() output the plans declare: path, caption file, the plan's category, the analysis's
    subcategory (a stacked table: its stage's generic table rule, filed per table where a stacked table of its stage
    has a subcategory)."""
    study = study_of()
    declared = set()
    for plan in STAGE_PLANS:
        stage = study.stage(plan.STAGE)
        per_table = any(a.report_subcategory for a in stacked_tables(plan.ANALYSES).values())
        for analysis in plan.ANALYSES:
            paths = ([study.paths.table(t) for t in analysis.tables]
                     + [stage.figure_file(f, "png") for f in analysis.figures]
                     + [study.paths.page(plan.STAGE, p) for p in analysis.pages])
            for index, (path, caption) in enumerate(zip(paths, analysis.captions, strict=True)):
                if analysis.stack_key and index == 0:
                    declared.add((study.paths.table("{table}"), stacked_table_caption(plan.STAGE),
                                  plan.REPORT_CATEGORY, "per table" if per_table else None))
                else:
                    declared.add((path, caption, plan.REPORT_CATEGORY, analysis.report_subcategory))
    return declared


def test_the_rules_report_exactly_the_outputs_the_plans_declare(rule_reports):
    # Each output is declared once, in its plan: a rule that wrote a report() of its own (another caption, category
    # or subcategory) or a declared output no rule reports would show here.
    declared = _declared_reports()
    assert sorted(rule_reports - declared, key=str) == [], "reported by a rule, declared by no plan"
    assert sorted(declared - rule_reports, key=str) == [], "declared by a plan, reported by no rule"


def test_a_report_output_carries_the_caption_category_and_subcategory_its_analysis_declares():
    from snakemake.io import is_flagged

    study = study_of()
    figure = study.surface.report_figure("sep_gradient")  # the table of the same name has a caption of its own
    assert is_flagged(figure, "report") and str(figure) == study.paths.figure("surface", "sep_gradient", "png")
    entry = figure.flags["report"]
    assert (entry.caption, entry.category, entry.subcategory) == (
        "../report/surface_sep_gradient_figure.rst", "What does BERT look at?", None)
    table = study.surface.report_table("sep_gradient").flags["report"]
    assert table.caption == "../report/surface_sep_gradient.rst"
    sinks = study.surface.report_table("sink_rates")
    assert str(sinks) == study.paths.table("sink_rates")
    assert (sinks.flags["report"].caption, sinks.flags["report"].subcategory) == (
        "../report/surface_sink_rates.rst", "Head diagnostics")
    probes = study.syntax.report_table("probes").flags["report"]
    assert (probes.caption, probes.category) == ("../report/syntax_probes.rst", "What does BERT look at?")
    stacked = study.surface.report_stacked()
    assert str(stacked) == study.paths.table("{table}")
    assert stacked.flags["report"].subcategory == study.surface.table_subcategory
    with pytest.raises(KeyError, match="declares figure 'probes'"):
        study.syntax.report_figure("probes")
    # A stage none of whose stacked tables has a subcategory files them under none.
    assert study.ablation.report_stacked().flags["report"].subcategory is None
    page = study.explorer.report_page("{model}")
    assert str(page) == study.paths.page("explorer", "{model}")
    assert (page.flags["report"].caption, page.flags["report"].category) == (
        "../report/explorer_head_explorer.rst", "Head explorer")
    atlas = study.report.report_figure("report/atlas")  # the report's figures are in folders of their own
    assert str(atlas) == study.paths.figure("report", "atlas", "png")
    assert atlas.flags["report"].caption == "../report/report_atlas_figure.rst"


def test_rule_all_asks_for_every_declared_table_of_a_full_study():
    study = study_of()
    planned = set(study.outputs())
    for plan in STAGE_PLANS:
        for analysis in plan.ANALYSES:
            for table in analysis.tables:
                # one signal only and no model at several revisions in the default study
                if table in ("signal_comparison", "head_development", "icl_score"):
                    continue
                assert study.paths.table(table) in planned, table


def test_the_explorer_reads_the_tables_the_stages_declare_for_it():
    declared = explorer.explorer_tables()
    assert declared[0] == "models"
    assert {"surface_heads", "attention_distance", "head_clusters", "dependency_heads", "coref_heads",
            "finetune_change", "lexical_heads"} <= set(declared)
    assert {m.name for m in HEAD_MEASURES if m.in_explorer} <= set(declared)
    study = study_of()
    assert set(study.explorer.tables) == set(declared)
    grid = [(m["table"], m["column"]) for m in study.explorer.measures]
    assert [(m.name, m.name) for m in HEAD_MEASURES if m.in_explorer] == [g for g in grid if g[0] != "head_diagnostics"]
    assert ("head_diagnostics", "induction") in grid
    assert {m["table"] for m in study.explorer.measures} <= set(study.explorer.tables)


def test_a_study_without_the_surface_dump_plans_no_head_measure_and_the_explorer_shows_none():
    study = study_of(one_model(wiki=False))
    assert not study.surface.pairs
    assert not any(study.paths.table(m.name) in study.outputs() for m in HEAD_MEASURES)
    assert study.explorer.measures == []


def test_the_head_measure_caption_shows_the_declared_caption():
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    template = (REPO / "report" / "surface_table.rst").read_text(encoding="utf-8")
    for measure in HEAD_MEASURES:
        text = env.from_string(template).render(snakemake=SimpleNamespace(params=SimpleNamespace(
            caption=measure.caption)))
        body = publish_parts(text, writer="html")["body"]
        assert measure.caption.split()[0] in body


def test_a_plan_imports_only_the_plans_of_earlier_stages():
    import ast

    order = {stage: index for index, stage in enumerate(STAGES)}
    for plan in STAGE_PLANS:
        tree = ast.parse((REPO / "workflow_scripts" / "study" / "plans" / f"{plan.STAGE}.py").read_text())
        named = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module is None:
                    named |= {alias.name for alias in node.names}
                else:
                    named.add(node.module.split(".")[0])
        later = [name for name in named if name in order and order[name] >= order[plan.STAGE]]
        assert not later, f"plans/{plan.STAGE}.py imports the plan of {later}: a plan reads earlier stages only"


def test_diagnostic_sequences_are_cut_to_what_a_model_takes_and_a_note_says_so():
    config = one_model()
    config["surface"] = {"diagnostics": {"length": 70}}
    study = study_of(config)
    assert set(study.surface.diagnostic_lengths.values()) == {63}  # 2 x 63 + 2 special tokens = max_length 128
    assert any("reads sequences of 2 x 63 tokens, not 2 x 70" in note for note in study.notes)
    config["surface"] = {"diagnostics": {"length": 40}}
    study = study_of(config)
    assert set(study.surface.diagnostic_lengths.values()) == {40} and not any("2 x 40" in n for n in study.notes)


def test_a_study_of_other_signals_only_plans_no_diagnostics():
    study = study_of({**one_model(), "attention": {"signals": ["norm"]}})
    assert study.surface.pairs and not study.surface.diagnostic_pairs
    outputs = study.outputs()
    assert study.paths.table("head_diagnostics") not in outputs and study.paths.table("sink_rates") not in outputs
    assert study.paths.table("first_token") in outputs


def test_each_stage_plan_is_frozen_and_kept_by_its_stage_name():
    import dataclasses

    study = study_of(one_model(tasks=["cola"]))
    assert list(study.plans) == list(STAGES)
    for stage in STAGES:
        plan = study.stage(stage)
        assert dataclasses.is_dataclass(plan) and type(plan).__dataclass_params__.frozen
        assert plan.study is study and all(path in study.outputs() for path in plan.outputs)
        with pytest.raises(dataclasses.FrozenInstanceError):
            plan.outputs = []
    assert study.finetune.runs == [(MODEL, "cola", seed) for seed in study.config["finetune"]["seeds"]]
    assert study.surface is study.stage("surface")


def test_a_plan_reads_only_the_plans_made_before_it():
    from workflow_scripts.study.model import new_study

    study = new_study(study_of().config)
    with pytest.raises(LookupError, match="the finetune stage is not planned yet"):
        _ = study.finetune
    with pytest.raises(LookupError, match="out of order"):
        study.add_plan("surface", stage_plans()[0].plan(study))
    with pytest.raises(KeyError, match="'fine_tune' is not a stage"):
        study.stage("fine_tune")
    with pytest.raises(AttributeError):
        _ = study.fine_tune


def test_the_study_holds_what_the_stages_share_and_no_stage_writes_it():
    """Study's fields are the shared ones (at most 8); no module assigns to a study's attribute: each plan returns its
    frozen Plan, and only the build records it."""
    import ast
    import dataclasses

    from workflow_scripts.study.model import Study

    assert [f.name for f in dataclasses.fields(Study)] == ["config", "paths", "corpora", "splits", "notes", "plans"]
    assignments = []
    for path in sorted((REPO / "workflow_scripts").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
            for target in targets:
                while isinstance(target, ast.Subscript):
                    target = target.value
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id in ("study", "STUDY")):
                    assignments.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert assignments == []


def test_the_generic_table_rule_stacks_what_each_declaration_says():
    from workflow_scripts.surface.measures import measure_named

    study = study_of(one_model(tasks=["cola"]))
    stacked = set(stacked_tables(surface.ANALYSES))
    assert {"surface_heads", "sep_gradient", "head_clusters", "attention_distance"} <= stacked
    assert {m.name for m in HEAD_MEASURES} <= stacked and "head_diagnostics" not in stacked
    for name in stacked - {"icl_score"}:
        wildcards = SimpleNamespace(table=name)
        pairs = {"sep_gradient": study.surface.gradient_pairs,
                 "head_clusters": study.surface.cluster_pairs}.get(name, study.surface.pairs)
        assert study.surface.stacked_parts(wildcards) == [
            f"R/analysis/surface/{m}/{c}/{name}.csv" for m, c in pairs]
        assert study.surface.stack_key(wildcards) == list(stacked_tables(surface.ANALYSES)[name].stack_key)
    assert study.surface.table_caption(SimpleNamespace(table="same_word")) == measure_named("same_word").caption
    assert study.surface.table_caption(SimpleNamespace(table="surface_heads")) == (
        REPO / "report" / "surface_heads.rst").read_text(encoding="utf-8")
    assert study.surface.table_subcategory(SimpleNamespace(table="same_word")) == "Head measures"
    assert study.surface.table_subcategory(SimpleNamespace(table="surface_heads")) is None


def test_the_effects_and_ablation_tables_are_stacked_by_their_stages_generic_rule():
    study = study_of(one_model(tasks=["cola"]))
    effects, ablation = study.finetune_effects, study.ablation
    assert set(stacked_tables(effects.analyses)) == {"pattern_classes", "pattern_classifier", "finetune_change"}
    assert set(stacked_tables(ablation.analyses)) == {"head_disabling", "found_heads"}
    final = "cola.seed42.final"
    assert effects.stacked_parts(SimpleNamespace(table="finetune_change")) == [
        f"R/analysis/finetune_effects/{MODEL}/{final}/cola/finetune_change.csv"]  # the fine-tuned checkpoints' only
    assert effects.stacked_parts(SimpleNamespace(table="pattern_classes")) == [
        f"R/analysis/finetune_effects/{MODEL}/{c}/cola/pattern_classes.csv" for c in ("pretrained", final)]
    assert effects.stacked_parts(SimpleNamespace(table="pattern_classifier")) == [
        f"R/analysis/finetune_effects/{MODEL}/pattern_classifier.csv"]
    assert effects.stack_key(SimpleNamespace(table="finetune_change")) == ["model", "task", "checkpoint", "layer",
                                                                          "head"]
    assert ablation.stacked_parts(SimpleNamespace(table="head_disabling")) == [
        f"R/analysis/ablation/{MODEL}/cola.seed42/disabling.csv"]
    assert ablation.stack_key(SimpleNamespace(table="found_heads")) == ["model"]
    assert ablation.table_caption(SimpleNamespace(table="found_heads")) == (
        REPO / "report" / "ablation_found_heads.rst").read_text(encoding="utf-8")
    for plan in (effects, ablation):  # each table's output is the generic rule's alone
        assert all(study.paths.table(name) in study.outputs() for name in stacked_tables(plan.analyses))


def test_an_absent_report_table_gives_the_reason_its_analysis_declares():
    study = study_of(one_model(wiki=False, tasks=[]))
    absent = study.report.absent
    assert absent["surface_heads"] == surface.no_surface_dump(study) and "wiki/segments" in absent["surface_heads"]
    assert absent["head_diagnostics"] == absent["sink_rates"] == surface.no_diagnosed_pairs(study)
    assert absent["finetune_metrics"].startswith("the study fine-tunes no model")
    # A head measure declares no reason: the report says the study does not produce it.
    assert absent["first_token"] == "the study does not produce first_token.csv"
    assert "surface_heads" not in study_of(one_model()).report.absent
