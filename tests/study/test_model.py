"""The study model (workflow_scripts/study/model.py): the DAG's shape as plain data, from a validated config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from support.entries import TASKS
from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.core.stages import STAGES


def test_default_study_plans_every_stage():
    study = study_of()
    assert set(study.plans) == set(STAGES)
    outputs = study.outputs()
    assert len(outputs) == len(set(outputs))
    for table in ("data_summary", "models", "finetune_metrics", "attention_dumps", "surface_heads",
                  "dependency_best", "coref_best", "probes", "pattern_classes", "lexical_top_layers",
                  "paper_comparison"):
        assert f"R/tables/{table}.csv" in outputs
    assert "R/figures/summary/bert-base-uncased.png" in outputs
    assert not study.report.absent


def test_adding_rte_to_the_tasks_adds_exactly_its_runs_dumps_and_parts():
    before = study_of(one_model(tasks=["cola"]))
    after = study_of(one_model(tasks=["cola", "rte"]))
    seeds = after.config["finetune"]["seeds"]
    steps = after.config["finetune"]["save_steps"]

    assert set(after.data.data_tables()) - set(before.data.data_tables()) == {
        f"R/data/rte/{split}.parquet" for split in TASKS["rte"].splits}
    assert set(TASKS["rte"].splits) >= {"train", "dev"}
    assert set(after.finetune.runs) - set(before.finetune.runs) == {(MODEL, "rte", seed) for seed in seeds}
    rte_final = {f"rte.seed{seed}.final" for seed in seeds}
    # The dumps of attention.corpora do not change (rte's dev dumps are made for the effects stage's parts); rte's
    # final checkpoint adds the dumps its roles read (roles.finetuned): the surface corpus and EWT's score split.
    added = set(after.attention.dumps) - set(before.attention.dumps)
    assert added == {(MODEL, c, corpus, split) for c in rte_final for corpus, split in (("wiki", "segments"),
                                                                                      ("ewt", "dev"))}
    assert set(after.attention.role_dumps) - set(before.attention.role_dumps) == added
    expected_parts = {(MODEL, "pretrained", "rte"), *((MODEL, c, "rte") for c in rte_final)}
    if after.config["finetune_effects"]["trajectory"]:
        expected_parts |= {(MODEL, f"rte.seed{seed}.step{step}", "rte") for seed in seeds for step in steps}
    assert set(after.finetune_effects.targets) - set(before.finetune_effects.targets) == expected_parts
    # Nothing else moves but rte's roles: the other stages plan the same work, and the final tables keep their names.
    assert set(after.surface.pairs) - set(before.surface.pairs) == {(MODEL, c) for c in rte_final}
    assert after.surface.cluster_pairs == before.surface.cluster_pairs
    assert after.syntax.pairs == before.syntax.pairs and after.syntax.targets == before.syntax.targets
    assert set(after.syntax.role_targets) - set(before.syntax.role_targets) == {(MODEL, c, "ewt") for c in rte_final}
    assert set(after.syntax.coref_pairs) - set(before.syntax.coref_pairs) == {(MODEL, c) for c in rte_final}
    assert set(after.outputs()) == set(before.outputs())


def test_a_study_without_wiki_has_no_surface_outputs_and_the_report_says_why():
    study = study_of(one_model(wiki=False, tasks=["cola"]))
    assert study.surface.pairs == [] and study.stage("surface").outputs == []
    assert "surface_heads" not in study.report.tables
    assert "study.wiki" in study.report.absent["surface_heads"]
    assert study.report.tables["dependency_best"] == "R/tables/dependency_best.csv"


def test_without_glove_the_glove_probes_are_not_planned():
    study = study_of(one_model(glove=False, tasks=["cola"]))
    assert study.syntax.attention_probes == ["attn"] and study.syntax.baseline_probes == ["right_branching"]
    probes = {(c, p) for _, c, t, p, _ in study.syntax.probe_parts() if t == "ewt"}
    assert probes == {("pretrained", "attn"), ("pretrained", "mst_best_head"), ("random", "attn"),
                      ("random", "mst_best_head"), ("none", "right_branching")}


def test_a_study_without_tasks_finetunes_and_analyses_nothing():
    study = study_of(one_model(tasks=[]))
    assert study.finetune.runs == [] and study.finetune_effects.targets == []
    assert study.stage("finetune").outputs == [] and study.stage("finetune_effects").outputs == []
    assert "finetune_metrics" in study.report.absent and "pattern_classes" in study.report.absent


def test_finetune_tasks_must_be_study_tasks():
    with pytest.raises(ConfigError, match=r"'finetune.tasks': 'rte' is not one of 'study.tasks'"):
        study_of({**one_model(tasks=["cola"]), "finetune": {"tasks": ["rte"]}})


def test_offline_a_task_without_its_train_split_is_left_out_with_a_note(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "glue" / "QNLI").mkdir(parents=True)
    (mirror / "glue" / "QNLI" / "dev.tsv").write_text("index\tquestion\tsentence\tlabel\n")
    study = study_of({**one_model(tasks=["qnli"], treebanks=[], wiki=False, glove=False), "offline": True,
                      "mirror": str(mirror)})
    assert study.splits == {"qnli": ["dev"]}
    assert study.finetune.tasks == [] and study.finetune_effects.tasks == ["qnli"]
    assert any("'qnli' is left out" in note and "train" in note for note in study.notes)
    assert study.finetune_effects.pretrained_only == ["qnli"]
    assert study.finetune_effects.targets == [(MODEL, "pretrained", "qnli")]


def test_offline_a_listed_task_without_its_train_split_is_an_error(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "glue" / "QNLI").mkdir(parents=True)
    (mirror / "glue" / "QNLI" / "dev.tsv").write_text("index\tquestion\tsentence\tlabel\n")
    with pytest.raises(ConfigError, match=r"'finetune.tasks': task 'qnli' cannot be fine-tuned"):
        study_of({**one_model(tasks=["qnli"], treebanks=[], wiki=False, glove=False), "offline": True,
                  "mirror": str(mirror), "finetune": {"tasks": ["qnli"]}})


def test_trajectory_adds_the_intermediate_checkpoints_in_training_order():
    config = {**one_model(tasks=["cola"]), "finetune": {"seeds": [1], "save_steps": [10, 20]},
              "finetune_effects": {"trajectory": True}}
    effects = study_of(config).finetune_effects
    assert effects.effects_checkpoints(MODEL, "cola") == ["pretrained", "cola.seed1.step10", "cola.seed1.step20",
                                                          "cola.seed1.final"]
    config["finetune_effects"]["trajectory"] = False
    effects = study_of(config).finetune_effects
    assert effects.effects_checkpoints(MODEL, "cola") == ["pretrained", "cola.seed1.final"]


def test_the_report_context_carries_what_the_config_selects():
    study = study_of({**one_model(tasks=["cola"]), "attention": {"input_protocol": "text"}})
    context = study.report.report_context()
    assert context["models"] == [MODEL] and context["tasks"] == ["cola"]
    assert context["finetuned_tasks"] == ["cola"] and context["input_protocol"] == "text"


def test_model_source_leaves_out_how_a_model_is_used():
    study = study_of()
    assert study.stage("models").model_source(SimpleNamespace(model=MODEL)) == {"hub": "google-bert/bert-base-uncased"}


def test_the_plans_input_functions_follow_the_wildcards_and_the_study():
    from types import SimpleNamespace

    study = study_of(one_model(tasks=["cola"]))
    finetuned = SimpleNamespace(model=MODEL, checkpoint="cola.seed42.final")
    # the gradient of a fine-tuned checkpoint reads its own task's dev examples; the pretrained one does not
    assert study.surface.sep_gradient(finetuned)["task_data"] == "R/data/cola/dev.parquet"
    assert "task_data" not in study.surface.sep_gradient(SimpleNamespace(model=MODEL, checkpoint="pretrained"))
    dump = study.surface.dump(finetuned)["dump"]
    assert dump == f"R/attention/{MODEL}/cola.seed42.final/wiki/segments/manifest.json"
    probe = study.syntax.probe_attention(SimpleNamespace(model=MODEL, checkpoint="pretrained", treebank="ewt",
                                                   probe="attn_glove"))
    assert probe["train_maps"] == f"R/analysis/syntax/{MODEL}/pretrained/probe_features/ewt_train.maps.npy"
    assert probe["glove"] == "R/data/glove/vectors.parquet"
    baseline = SimpleNamespace(model=MODEL, treebank="ewt", probe="right_branching")
    assert "glove" not in study.syntax.probe_baseline(baseline)
    effects = study.finetune_effects.dump(SimpleNamespace(model=MODEL, checkpoint="pretrained", corpus="cola"))
    assert effects["tokens"] == f"R/tokens/{MODEL}/cola/dev.parquet"
    pretrained = SimpleNamespace(model=MODEL, checkpoint="pretrained", corpus="cola")
    rule_classes = study.finetune_effects.pattern_classes(pretrained)
    assert set(rule_classes) == ({"checkpoint", "features"} if study.config["finetune_effects"]["classifier"] == "rule"
                                 else {"checkpoint", "features", "dump", "tokens", "cnn", "cnn_info"})


@pytest.mark.parametrize(("num_shards", "per_job", "groups"), [
    (4, 1, ["shard-0000-of-0004", "shard-0001-of-0004", "shard-0002-of-0004", "shard-0003-of-0004"]),
    (4, 2, ["shards-0000-0001-of-0004", "shards-0002-0003-of-0004"]),
    (5, 2, ["shards-0000-0001-of-0005", "shards-0002-0003-of-0005", "shard-0004-of-0005"]),
    (3, 8, ["shards-0000-0002-of-0003"]),
])
def test_analysis_jobs_read_groups_of_consecutive_shards(num_shards, per_job, groups):
    study = study_of({"attention": {"num_shards": num_shards, "analysis_shards_per_job": per_job}})
    assert study.attention.shard_stems == [f"shard-{i:04d}-of-{num_shards:04d}" for i in range(num_shards)]
    assert study.shard_groups == groups
