"""One plan per stage (workflow_scripts/study/plans/): run in the order of STAGES, each declaring its analyses;
rule all, the explorer and the report read the declarations."""

from __future__ import annotations

import re
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


def test_every_analysis_declares_one_caption_per_table_and_figure_in_their_order():
    for plan in STAGE_PLANS:
        for analysis in plan.ANALYSES:
            assert len(analysis.captions) == len(analysis.tables) + len(analysis.figures), (plan.STAGE, analysis.name)
            for caption in analysis.captions:
                assert (REPO / "report" / caption).is_file(), f"{plan.STAGE}: {caption} is not under report/"


def _asked_of_the_plan(rules: str, stage: str, kind: str, name: str) -> bool:
    """Whether a rule file takes output ``name`` from its stage's plan (STUDY.<stage>.report_<kind>("<name>"))."""
    return f'STUDY.{stage}.report_{kind}("{name}")' in rules


def test_every_declared_caption_is_shown_by_a_rule_of_its_stage():
    # A rule asks the plan for its report() output (report_table, report_figure, report_stacked), or, in the stages
    # not yet moved to it, names the caption file itself.
    for plan in STAGE_PLANS:
        rules = (REPO / "rules" / f"{plan.STAGE}.smk").read_text(encoding="utf-8")
        for analysis in plan.ANALYSES:
            outputs = [("table", t) for t in analysis.tables] + [("figure", f) for f in analysis.figures]
            for index, ((kind, name), caption) in enumerate(zip(outputs, analysis.captions, strict=True)):
                # A stacked table's caption reaches the generic rule's caption file through params.caption.
                stacked = analysis.stack_key and index == 0
                if stacked and f"STUDY.{plan.STAGE}.report_stacked()" in rules:
                    continue
                shown = f"../report/{stacked_table_caption(plan.STAGE)}" if stacked else f"../report/{caption}"
                assert _asked_of_the_plan(rules, plan.STAGE, kind, name) or f'"{shown}"' in rules, (
                    f"rules/{plan.STAGE}.smk does not show {caption}")


def test_every_declared_table_is_the_output_of_a_rule_of_its_stage():
    for plan in STAGE_PLANS:
        rules = (REPO / "rules" / f"{plan.STAGE}.smk").read_text(encoding="utf-8")
        for analysis in plan.ANALYSES:
            for table in analysis.tables:
                generic = analysis.stack_key and f"rule {plan.STAGE}_table:" in rules and (
                    'table("{table}")' in rules or f"STUDY.{plan.STAGE}.report_stacked()" in rules)
                asked = _asked_of_the_plan(rules, plan.STAGE, "table", table)
                assert generic or asked or re.search(rf'table\("{table}"\)', rules), (
                    f"no rule of {plan.STAGE} writes {table}")


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
