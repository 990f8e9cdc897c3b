"""What each model's explorer page reads, as the study model plans it (workflow_scripts/study/plans/explorer.py)."""

from __future__ import annotations

import pytest

from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.plans.explorer import explorer_inputs, explorer_layout


def test_a_page_per_model_reads_the_head_tables_patterns_and_a_fine_tuned_tasks_maps():
    study = study_of(one_model(tasks=["cola", "rte"]))
    assert study.stage("explorer").outputs == [f"R/explorer/{MODEL}.html", "R/explorer/_index.html"]
    inputs, layout = explorer_inputs(study, MODEL), explorer_layout(study, MODEL)
    assert inputs["dependency_heads"] == "R/tables/dependency_heads.csv" and inputs["models"] == "R/tables/models.csv"
    seed = study.config["finetune"]["seeds"][0]
    assert layout["example_checkpoints"] == [["pretrained", "pretrained"],
                                             [f"cola.seed{seed}.final", "fine-tuned on cola"]]
    assert inputs["example_dumps"] == [f"R/attention/{MODEL}/pretrained/cola/dev/manifest.json",
                                       f"R/attention/{MODEL}/cola.seed{seed}.final/cola/dev/manifest.json"]
    assert inputs["example_tokens"] == f"R/tokens/{MODEL}/cola/dev.parquet"
    # Pattern features at pretrained and each task's final checkpoint, lined up with the layout.
    assert layout["pattern_parts"] == [["pretrained", "cola"], [f"cola.seed{seed}.final", "cola"],
                                       ["pretrained", "rte"], [f"rte.seed{seed}.final", "rte"]]
    features = f"R/analysis/finetune_effects/{MODEL}/cola.seed{seed}.final/cola/pattern_features.parquet"
    assert inputs["patterns"][1] == features


def test_the_example_task_can_be_chosen_and_must_be_fine_tuned_and_analysed():
    study = study_of({**one_model(tasks=["cola", "rte"]), "explorer": {"task": "rte"}})
    assert explorer_layout(study, MODEL)["corpus"] == "rte"
    with pytest.raises(ConfigError, match="config key 'explorer.task': 'sst2' is not a task the study fine-tunes"):
        study_of({**one_model(tasks=["cola"]), "explorer": {"task": "sst2"}})


def test_without_fine_tuning_the_page_draws_the_treebanks_score_split_pretrained_only():
    study = study_of(one_model(tasks=[]))
    layout, inputs = explorer_layout(study, MODEL), explorer_inputs(study, MODEL)
    assert (layout["corpus"], layout["split"]) == ("ewt", "dev")
    assert layout["example_checkpoints"] == [["pretrained", "pretrained"]] and layout["pattern_parts"] == []
    assert "finetune_change" not in inputs and "surface_heads" in inputs
