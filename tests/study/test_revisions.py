"""Hub revisions as an axis of the study (workflow_scripts/study/revisions.py): a model entry that lists revisions
becomes one model per revision, selected in its place, and the report plans the head development when a model has
two or more."""

from __future__ import annotations

import pytest

from support.paths import REPO
from support.study_configs import study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.checks import resolve_config
from workflow_scripts.study.revisions import expand_revisions, revision_model_name, revision_series, revision_step

PYTHIA = {"hub": "EleutherAI/pythia-160m", "revisions": ["step1000", "step143000"], "max_length": 64}


@pytest.mark.parametrize(("revision", "step"), [("step143000", 143000), ("step-1000", 1000), ("main", None),
                                                ("step1000-tokens4B", 1000), ("global_step20", 20),
                                                ("ckpt-500", 500)])
def test_the_training_step_a_revision_names(revision, step):
    assert revision_step(revision) == step


def test_a_revision_that_is_not_a_folder_name_becomes_one():
    assert revision_model_name("pythia", "refs/pr/1") == "pythia-refs-pr-1"


def config_with(models: dict, selected: list[str]) -> dict:
    return {"study": {"models": list(selected)}, "models": models}


def test_an_entry_with_revisions_becomes_one_model_per_revision_selected_in_its_place():
    config = config_with({"gpt2": {"hub": "openai-community/gpt2"}, "pythia-160m": dict(PYTHIA)},
                         ["gpt2", "pythia-160m"])
    expand_revisions(config)
    assert config["study"]["models"] == ["gpt2", "pythia-160m-step1000", "pythia-160m-step143000"]
    assert config["models"]["pythia-160m-step143000"] == {"hub": "EleutherAI/pythia-160m", "revision": "step143000",
                                                          "max_length": 64}
    series = revision_series(config)
    assert list(series) == ["pythia-160m"]
    assert [(p.model, p.revision, p.step) for p in series["pythia-160m"]] == [
        ("pythia-160m-step1000", "step1000", 1000), ("pythia-160m-step143000", "step143000", 143000)]
    expand_revisions(config)  # a second pass (the prefetch resolves, then the workflow) changes nothing
    assert config["study"]["models"] == ["gpt2", "pythia-160m-step1000", "pythia-160m-step143000"]


def test_an_entry_the_config_gives_for_a_revision_refines_the_generated_one():
    # What the prefetch's offline config writes: the revision's local copy, its hub id set to null.
    config = config_with({"pythia-160m": dict(PYTHIA),
                          "pythia-160m-step1000": {"hub": None, "path": "/models/pythia-160m-step1000"}},
                         ["pythia-160m"])
    expand_revisions(config)
    assert config["models"]["pythia-160m-step1000"] == {"hub": None, "path": "/models/pythia-160m-step1000",
                                                        "max_length": 64}
    assert config["models"]["pythia-160m-step143000"]["revision"] == "step143000"


def test_a_study_selecting_one_revision_by_its_name_selects_only_that_one():
    config = config_with({"pythia-160m": dict(PYTHIA)}, ["pythia-160m-step1000"])
    expand_revisions(config)
    assert config["study"]["models"] == ["pythia-160m-step1000"]
    assert [p.model for p in revision_series(config)["pythia-160m"]] == ["pythia-160m-step1000"]


@pytest.mark.parametrize(("entry", "message"), [
    ({**PYTHIA, "revision": "step1000"}, "config key 'models.pythia-160m': gives both 'revision' (step1000) and "
                                         "'revisions'"),
    ({"path": "/models/pythia", "revisions": ["a", "b"]}, "config key 'models.pythia-160m.revisions': revisions are "
                                                          "hub revisions, and this entry has no 'hub' id"),
    ({**PYTHIA, "revisions": ["a/b", "a-b"]}, "two revisions make the same model name (pythia-160m-a-b, "
                                              "pythia-160m-a-b)"),
])
def test_revisions_that_cannot_be_studied_are_refused_naming_the_key(entry, message):
    config = config_with({"pythia-160m": entry}, ["pythia-160m"])
    with pytest.raises(ConfigError) as info:
        expand_revisions(config)
    assert message in str(info.value)


def test_the_workflow_config_expands_revisions_before_its_checks(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text("study: {models: [pythia-160m]}\nmodels:\n  pythia-160m: {hub: EleutherAI/pythia-160m, "
                     "revisions: [step1000, step143000]}\n")
    config = resolve_config([study], [])
    assert config["study"]["models"] == ["pythia-160m-step1000", "pythia-160m-step143000"]


def test_the_decoders_profile_studies_pythia_at_its_revisions():
    config = resolve_config([REPO / "profiles" / "decoders" / "study.yaml"], [])
    assert config["study"]["models"] == ["gpt2", "pythia-160m-step1000", "pythia-160m-step16000",
                                         "pythia-160m-step143000"]


def test_the_report_draws_the_head_development_of_a_model_at_two_revisions():
    models = {"pythia-160m": {"hub": "EleutherAI/pythia-160m", "revisions": ["step1000", "step143000"]}}
    study = study_of({"study": {"models": ["pythia-160m"], "tasks": [], "treebanks": ["ewt"], "wiki": True},
                      "models": models})
    outputs = set(study.outputs())
    assert {"R/tables/head_development.csv", "R/figures/development/pythia-160m.png"} <= outputs
    assert set(study.report.development_inputs) == {"sink_rates", "head_diagnostics", "dependency_heads"}
    assert study.report.development_series == {"pythia-160m": [["pythia-160m-step1000", "step1000", 1000],
                                                        ["pythia-160m-step143000", "step143000", 143000]]}
    # the ICL score of each revision (surface stage), drawn beside the induction score
    assert "R/tables/icl_score.csv" in outputs
    assert study.surface.icl_points == {"pythia-160m-step1000": ["pythia-160m", "step1000", 1000],
                                "pythia-160m-step143000": ["pythia-160m", "step143000", 143000]}
    assert study.report.development_figure_inputs == {"icl_score": "R/tables/icl_score.csv"}
    # role agreement: each revision with the next and with the last
    assert [(p["relation"], p["first_model"], p["second_model"]) for p in study.report.role_agreement_pairs] == [
        ("revision_next", "pythia-160m-step1000", "pythia-160m-step143000"),
        ("revision_last", "pythia-160m-step1000", "pythia-160m-step143000")]
    # one revision has nothing to develop over
    models["pythia-160m"]["revisions"] = ["step1000"]
    one = study_of({"study": {"models": ["pythia-160m"], "tasks": [], "treebanks": ["ewt"], "wiki": True},
                    "models": models})
    assert "R/tables/head_development.csv" not in set(one.outputs())
    assert "R/tables/icl_score.csv" not in set(one.outputs()) and not one.surface.icl_points


def test_the_prefetchs_entry_for_a_revision_keeps_the_models_own_settings(tmp_path):
    # The schema's defaults are filled in after the expansion: the offline entry does not reset max_length to 128.
    study = tmp_path / "study.yaml"
    study.write_text("study: {models: [pythia-160m]}\nmodels:\n  pythia-160m: {hub: EleutherAI/pythia-160m, "
                     "revisions: [step1000, step143000], max_length: 512}\n")
    offline = tmp_path / "offline.yaml"
    offline.write_text("models:\n  pythia-160m-step1000: {hub: null, path: /models/pythia-160m-step1000}\n")
    config = resolve_config([study, offline], [], semantics=False)
    assert config["models"]["pythia-160m-step1000"] == {"hub": None, "path": "/models/pythia-160m-step1000",
                                                        "max_length": 512, "subdir": "model",
                                                        "prepend_bos": None, "dtype": "float32"}
    assert config["models"]["pythia-160m-step143000"]["max_length"] == 512
