"""The study model's signal subjects (attention.signals, docs/signals.md) and causal head checks (docs/ablation.md)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.core.subjects import base_model, split_subject, subject_name

SIGNALS = {"attention": {"signals": ["attention", "norm", "rollout"]}}


def _of(subject, keys):
    """The keys of one subject, without the subject."""
    return {tuple(rest) for m, *rest in keys if m == subject}


def test_subject_names_round_trip():
    assert subject_name(MODEL, "attention") == MODEL
    assert subject_name(MODEL, "norm") == f"{MODEL}@norm"
    assert split_subject(f"{MODEL}@rollout") == (MODEL, "rollout")
    assert split_subject(MODEL) == (MODEL, "attention")
    assert base_model(f"{MODEL}@norm") == MODEL


def test_each_signal_is_a_subject_with_its_own_dumps_and_analyses_but_the_models_checkpoints():
    # A fine-tuned checkpoint's roles are of its attention weights alone (roles.finetuned): none here.
    no_roles = {"roles": {"finetuned": []}}
    plain = study_of({**one_model(tasks=["cola"]), **no_roles})
    study = study_of({**one_model(tasks=["cola"]), **SIGNALS, **no_roles})
    assert study.subjects == [MODEL, f"{MODEL}@norm", f"{MODEL}@rollout"]
    # Three times the dumps, one set per signal, and nothing else of the model's is repeated.
    assert len(study.attention.dumps) == 3 * len(plain.attention.dumps)
    assert {(m, c, corpus, s) for m, c, corpus, s in study.attention.dumps if m == f"{MODEL}@norm"} == {
        (f"{MODEL}@norm", c, corpus, s) for _, c, corpus, s in plain.attention.dumps}
    assert study.finetune.runs == plain.finetune.runs
    assert study.paths.checkpoint_manifest(f"{MODEL}@norm", "pretrained") == (
        f"R/checkpoints/{MODEL}/pretrained/checkpoint.json")
    assert study.paths.token_table(f"{MODEL}@rollout", "ewt", "dev") == f"R/tokens/{MODEL}/ewt/dev.parquet"
    assert study.paths.dump_manifest(f"{MODEL}@norm", "pretrained", "ewt", "dev") == (
        f"R/attention/{MODEL}@norm/pretrained/ewt/dev/manifest.json")
    # Every analysis runs on every signal ...
    for subject in study.subjects:
        assert _of(subject, study.surface.pairs) == {(c,) for _, c in plain.surface.pairs}
        assert _of(subject, study.syntax.targets) == {(c, t) for _, c, t in plain.syntax.targets}
        assert _of(subject, study.finetune_effects.targets) == {(c, t) for _, c, t in plain.finetune_effects.targets}
        assert f"R/figures/summary/{subject}.png" in study.outputs()
    # ... the fine-tuned checkpoints a signal subject analyses are its model's ...
    effects = study.finetune_effects
    assert effects.effects_checkpoints(f"{MODEL}@norm", "cola") == effects.effects_checkpoints(MODEL, "cola")
    # ... except the gradient with respect to the attention weights, a property of the weights alone.
    assert study.surface.gradient_pairs == plain.surface.gradient_pairs == plain.surface.pairs
    assert study.report.report_context()["models"] == study.subjects
    # The model's card, explorer page and ablations stay the model's.
    assert study.ablation.disabling_runs == plain.ablation.disabling_runs
    assert study.stage("explorer").outputs == plain.stage("explorer").outputs


def test_without_the_attention_signal_there_is_no_gradient_analysis():
    study = study_of({**one_model(tasks=["cola"]), "attention": {"signals": ["norm"]}})
    assert study.subjects == [f"{MODEL}@norm"]
    assert study.surface.gradient_pairs == [] and study.surface.pairs
    assert "R/tables/sep_gradient.csv" not in study.outputs()
    assert "R/tables/surface_heads.csv" in study.outputs()


def test_a_model_name_with_the_signal_separator_is_refused():
    with pytest.raises(ConfigError, match="model name"):
        study_of({"study": {"models": ["x@norm"]}, "models": {"x@norm": {"hub": "owner/x"}}})


def test_every_fine_tuned_task_is_ablated_by_default():
    study = study_of(one_model(tasks=["cola", "rte"]))
    assert study.ablation.disabling_runs == study.finetune.runs
    assert "R/tables/head_disabling.csv" in study.outputs()
    assert f"R/figures/ablation/head_disabling_{MODEL}.png" in study.outputs()
    assert study.ablation.found_heads_models == [MODEL] and "R/tables/found_heads.csv" in study.outputs()


def test_ablation_tasks_choose_the_runs_and_must_be_fine_tuned():
    study = study_of({**one_model(tasks=["cola", "rte"]), "ablation": {"tasks": ["rte"]}})
    assert {t for _, t, _ in study.ablation.disabling_runs} == {"rte"}
    inputs = study.ablation.found_heads(SimpleNamespace(model=MODEL))
    seeds = study.config["finetune"]["seeds"]
    assert inputs["finetuned"] == [f"R/checkpoints/{MODEL}/rte.seed{s}.final/checkpoint.json" for s in seeds]
    assert inputs["dev"] == ["R/data/rte/dev.parquet"] * len(seeds)
    assert inputs["dependency_best"] == "R/tables/dependency_best.csv"
    with pytest.raises(ConfigError, match=r"'ablation.tasks': 'wic' is not a task this study fine-tunes"):
        study_of({**one_model(tasks=["cola"]), "ablation": {"tasks": ["wic"]}})


def test_no_ablation_without_tasks_or_found_heads():
    study = study_of({**one_model(tasks=["cola"]), "ablation": {"tasks": [], "found_heads": False}})
    assert study.ablation.disabling_runs == [] and study.ablation.found_heads_models == []
    assert study.stage("ablation").outputs == []


def test_ablating_a_model_whose_family_is_not_declared_is_refused_before_any_job(tmp_path):
    import json

    folder = tmp_path / "albert"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "albert", "max_position_embeddings": 512}))
    (folder / "spiece.model").write_bytes(b"")  # a tokenizer, which the config checks ask of a model folder
    local = {"study": {"models": ["local"], "tasks": ["cola"]}, "models": {"local": {"path": str(folder)}}}
    with pytest.raises(ConfigError, match=r"config key 'ablation': head ablation acts inside each layer's attention, "
                                          r"whose layout .*models/families.py does not declare for model 'local' "
                                          r"\(model type 'albert'\)\. Set ablation.tasks to \[\]"):
        study_of(local)
    study = study_of({**local, "ablation": {"tasks": [], "found_heads": False}})  # no ablation: any model
    assert study.ablation.disabling_runs == [] and study.ablation.found_heads_models == []
