"""The report's plan of the cross-model atlas (workflow_scripts/study/plans/report.py, plan_atlas): which role tables,
pattern features and random-init checkpoints it reads, and when it is planned at all."""

from __future__ import annotations

from support.study_configs import one_model, study_of

ATLAS = "R/tables/atlas.csv"


def test_the_atlas_reads_the_role_tables_the_study_makes():
    study = study_of(one_model(tasks=["cola"]))
    assert ATLAS in study.outputs() and "R/figures/report/atlas.png" in study.outputs()
    inputs = study.report.atlas_inputs
    assert {"models", "head_diagnostics", "dependency_best", "dependency_heads", "coref_best",
            "coref_heads"} <= set(inputs)
    # the pretrained checkpoint's pattern features and the fine-tuned run's final checkpoint's (not its steps)
    assert inputs["patterns"] == [f"R/analysis/finetune_effects/bert-base-uncased/{checkpoint}/cola/"
                                  "pattern_features.parquet" for checkpoint in ("pretrained", "cola.seed42.final")]
    assert study.report.atlas_params["patterns"] == [["bert-base-uncased", "pretrained", "cola"],
                                              ["bert-base-uncased", "cola.seed42.final", "cola"]]
    assert inputs["random_checkpoints"] == ["R/checkpoints/bert-base-uncased/random/checkpoint.json"]
    assert study.report.atlas_params["random_models"] == ["bert-base-uncased"]
    # role agreement is planned with the atlas: the pretrained checkpoint against the fine-tuned one
    assert {"R/tables/role_agreement.csv", "R/figures/report/role_agreement.png"} <= set(study.outputs())
    assert [(p["relation"], p["second_checkpoint"]) for p in study.report.role_agreement_pairs] == [
        ("pretrained_vs_finetuned", "cola.seed42.final")]


def test_a_study_without_syntax_reads_only_what_it_has():
    study = study_of(one_model(tasks=[], treebanks=[]))
    assert ATLAS in study.outputs()
    assert not {"dependency_best", "coref_best", "head_disabling"} & set(study.report.atlas_inputs)
    assert study.report.atlas_inputs["patterns"] == []
