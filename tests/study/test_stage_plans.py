"""One plan per stage (workflow_scripts/study/plans/): run in the order of STAGES, each declaring its analyses;
rule all, the explorer and the report read the declarations."""

from __future__ import annotations

import re
from types import SimpleNamespace

from docutils.core import publish_parts
from jinja2 import Environment

from support.paths import REPO
from support.study_configs import one_model, study_of
from workflow_scripts.core.stages import STAGES
from workflow_scripts.study.build import STAGE_PLANS
from workflow_scripts.study.plans import explorer, surface
from workflow_scripts.surface.measures import HEAD_MEASURES


def test_one_plan_per_stage_in_the_order_of_the_stages():
    assert [plan.STAGE for plan in STAGE_PLANS] == list(STAGES)
    for plan in STAGE_PLANS:
        assert plan.__name__.rsplit(".", 1)[-1] == plan.STAGE
        assert callable(plan.plan)


def test_every_declared_caption_is_a_file_that_the_stage_rules_name():
    for plan in STAGE_PLANS:
        rules = (REPO / "rules" / f"{plan.STAGE}.smk").read_text(encoding="utf-8")
        for analysis in plan.ANALYSES:
            for caption in analysis.captions:
                assert (REPO / "report" / caption).is_file(), f"{plan.STAGE}: {caption} is not under report/"
                assert f'"../report/{caption}"' in rules, f"rules/{plan.STAGE}.smk does not show {caption}"


def test_every_declared_table_is_the_output_of_a_rule_of_its_stage():
    for plan in STAGE_PLANS:
        rules = (REPO / "rules" / f"{plan.STAGE}.smk").read_text(encoding="utf-8")
        for analysis in plan.ANALYSES:
            for table in analysis.tables:
                generic = table in surface.MEASURE_NAMES and 'table("{measure}")' in rules
                assert generic or re.search(rf'table\("{table}"\)', rules), f"no rule of {plan.STAGE} writes {table}"


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
    assert not study.surface_pairs
    assert not any(study.paths.table(m.name) in study.outputs() for m in HEAD_MEASURES)
    assert study.explorer.measures == []


def test_the_head_measure_caption_shows_the_declared_caption():
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    template = (REPO / "report" / "surface_head_measure.rst").read_text(encoding="utf-8")
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
    assert set(study.diagnostic_lengths.values()) == {63}  # 2 x 63 + 2 special tokens = max_length 128
    assert any("reads sequences of 2 x 63 tokens, not 2 x 70" in note for note in study.notes)
    config["surface"] = {"diagnostics": {"length": 40}}
    study = study_of(config)
    assert set(study.diagnostic_lengths.values()) == {40} and not any("2 x 40" in n for n in study.notes)


def test_a_study_of_other_signals_only_plans_no_diagnostics():
    study = study_of({**one_model(), "attention": {"signals": ["norm"]}})
    assert study.surface_pairs and not study.diagnostic_pairs
    outputs = study.outputs()
    assert study.paths.table("head_diagnostics") not in outputs and study.paths.table("sink_rates") not in outputs
    assert study.paths.table("first_token") in outputs
