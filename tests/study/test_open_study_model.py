"""The study model of an open study: a researcher's treebank and task entries plan exactly their branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.annotation import annotation_settings


def _ptb(folder: Path) -> dict:
    for name in ("wsj_0001.dp", "wsj_0002.dp", "wsj_0160.dp"):
        (folder / name).write_text("Pierre\tNNP\t2\nVinken\tNNP\t0\n\n", encoding="utf-8")
    return {"path": str(folder), "format": "malt_tab", "name": "WSJ sample",
            "splits": {"train": ["wsj_00*.dp"], "dev": "wsj_01[6-9]*.dp"}}


def _with_ptb(tmp_path: Path, **extra) -> dict:
    return {**one_model(tasks=[], treebanks=["ewt", "ptb"], wiki=False, glove=False),
            "treebanks": {"ptb": _ptb(tmp_path)}, "syntax": {"treebanks": ["ewt", "ptb"]},
            "attention": {"corpora": {"ewt": ["train", "dev"], "ptb": ["train", "dev"]}}, **extra}


def test_a_local_malt_tab_treebank_plans_its_dumps_heads_and_probes_and_skips_named_relations(tmp_path):
    study = study_of(_with_ptb(tmp_path))
    entry = study.corpora.treebanks["ptb"]
    assert (entry.format, entry.tagset, entry.labelled, entry.source) == ("malt_tab", "ptb", False, "path")
    assert [p.name for p in study.corpora.source_files("ptb", "train")] == ["wsj_0001.dp", "wsj_0002.dp"]
    assert study.splits["ptb"] == ["train", "dev"]
    assert {(c, t) for _, c, t in study.syntax.targets} == {(c, t) for c in ("pretrained", "random")
                                                           for t in ("ewt", "ptb")}
    assert f"R/figures/syntax/dependency_heads_{MODEL}_pretrained_ptb.png" in study.outputs()
    assert {t for _, _, t, _, _ in study.syntax.probe_parts()} == {"ewt", "ptb"}
    assert any("'ptb' has no relation labels" in note for note in study.notes)
    # the paper comparison and the summary read the first labelled treebank; both are named in the report
    context = study.report.report_context()
    assert context["syntax_treebank"] == "ewt" and context["treebank_names"]["ptb"] == "WSJ sample"
    assert "ptb" in study.treebank_corpora and "ptbwin" in study.treebank_corpora


def test_adding_the_treebank_adds_exactly_its_branch(tmp_path):
    base = {**one_model(tasks=[], wiki=False, glove=False), "attention": {"corpora": {"ewt": ["train", "dev"]}}}
    before, after = study_of(base), study_of(_with_ptb(tmp_path))
    added = set(after.outputs()) - set(before.outputs())
    assert added == {f"R/figures/syntax/{f}_{MODEL}_{c}_ptb.{e}" for f in ("dependency_heads", "best_head_maps")
                     for c in ("pretrained", "random") for e in ("png", "pdf")}
    assert set(after.attention.dumps) - set(before.attention.dumps) == {
        (MODEL, c, "ptb", s) for c in ("pretrained", "random") for s in ("train", "dev")}
    assert set(after.data.data_tables()) - set(before.data.data_tables()) == {"R/data/ptb/train.parquet",
                                                                    "R/data/ptb/dev.parquet"}


def test_a_local_csv_task_is_fine_tuned_and_analysed_like_a_built_in_one(tmp_path):
    folder = tmp_path / "reviews"
    folder.mkdir()
    for split in ("train", "dev"):
        (folder / f"{split}.csv").write_text("sentence,label\nGood.,positive\nBad.,negative\n", encoding="utf-8")
    entry = {"path": str(folder), "splits": {"train": "train.csv", "dev": "dev.csv"}, "text": ["sentence"],
             "label": "label", "kind": "classification", "labels": ["negative", "positive"],
             "metrics": ["accuracy", "f1"]}
    study = study_of({**one_model(tasks=["reviews"]), "tasks": {"reviews": entry}})
    spec = study.task_spec("reviews")
    assert (spec.reader, spec.is_pair, spec.main_metric, spec.labels) == ("table", False, "accuracy",
                                                                         ("negative", "positive"))
    assert [r for r in study.finetune.runs if r[1] == "reviews"] == [(MODEL, "reviews", 42)]
    assert "reviews" in study.finetune_effects.tasks and study.data.entry_pattern("hub", "table") == "reviews"
    assert "wic_marking" not in study.finetune_settings("reviews", MODEL)
    assert study.data.source_files("reviews", "dev") == [str(folder / "dev.csv")]


@pytest.mark.parametrize("change, fragment", [
    ({"study": {"treebanks": ["ewt", "ptbb"]}},
     "config key 'study.treebanks': 'ptbb' is not defined under 'treebanks'"),
    ({"treebanks": {"ptb": {"path": "/no/such/folder", "splits": {"dev": "*.dp"}}}},
     "config key 'treebanks.ptb.path': /no/such/folder is not a folder"),
    ({"data": {"coreference_treebanks": ["ptb"]}}, "treebank 'ptb' is malt_tab, but coreference mentions are read"),
    ({"tasks": {"ptb": {"glue": "cola"}}}, "config keys 'treebanks.ptb' and 'tasks.ptb': a corpus name names one"),
    ({"treebanks": {"ewt": {"ud": "UD_English-EWT", "sha256": {"en_ewt-ud-dev.conll": "a" * 64}}}},
     "config key 'treebanks.ewt.sha256': 'en_ewt-ud-dev.conll' is not a file of the entry (its files: "
     "en_ewt-ud-train.conllu, en_ewt-ud-dev.conllu, en_ewt-ud-test.conllu)"),
])
def test_bad_entries_are_refused_before_any_job(tmp_path, change, fragment):
    config = _with_ptb(tmp_path)
    for key, value in change.items():
        config[key] = {**config.get(key, {}), **value} if key != "study" else {**config["study"], **value}
    with pytest.raises(ConfigError) as info:
        study_of(config)
    assert fragment in str(info.value)


def test_a_glob_that_matches_no_file_names_the_split_key(tmp_path):
    config = _with_ptb(tmp_path)
    config["treebanks"]["ptb"]["splits"]["test"] = "wsj_09*.dp"
    with pytest.raises(ConfigError, match=r"'treebanks.ptb.splits.test': no file in .* matches wsj_09\*.dp"):
        study_of(config)


def test_a_task_file_without_the_declared_text_field_is_refused_before_any_job(tmp_path):
    (tmp_path / "dev.csv").write_text("text,label\nGood.,positive\n", encoding="utf-8")
    entry = {"path": str(tmp_path / "dev.csv"), "text": ["sentence"], "label": "label", "kind": "classification",
             "labels": ["negative", "positive"]}
    with pytest.raises(ConfigError, match=r"config key 'tasks.mine': .*dev.csv line 1 has no field\(s\) 'sentence'"):
        study_of({**one_model(tasks=["mine"]), "tasks": {"mine": entry}})


def test_an_unknown_field_of_an_entry_is_a_schema_error(tmp_path):
    config = _with_ptb(tmp_path)
    config["treebanks"]["ptb"]["fromat"] = "conllx"
    with pytest.raises(ConfigError, match=r"config key 'treebanks.ptb': unknown key\(s\) 'fromat'"):
        study_of(config)


def test_a_split_the_entry_does_not_define_is_refused_before_any_job(tmp_path):
    config = _with_ptb(tmp_path)
    config["attention"]["corpora"]["ptb"] = ["train", "test"]
    with pytest.raises(ConfigError, match=r"'attention.corpora.ptb': split\(s\) 'test' are not splits of 'ptb' "
                                          r"\(train, dev\)"):
        study_of(config)
    config = _with_ptb(tmp_path, syntax={"treebanks": ["ewt", "ptb"], "score_split": "test"})
    with pytest.raises(ConfigError, match=r"'syntax.score_split': 'test' is not a split of treebank 'ptb'"):
        study_of(config)


@pytest.mark.parametrize("change, fragment", [
    ({"treebanks": {"gsd": {"ud": "UD_German-GSD"}}, "study": {"treebanks": ["ewt", "gsd"]}},
     "config key 'treebanks.gsd.language': UD_German-GSD is read as UD's files en_gsd-ud-train.conllu"),
    ({"syntax": {"treebanks": ["ewtt"]}}, "config key 'syntax.treebanks': 'ewtt' is not defined under 'treebanks'"),
    ({"syntax": {"coref_treebank": "gumm"}}, "config key 'syntax.coref_treebank': 'gumm' is not defined"),
    ({"study": {"treebanks": ["ewt", "gum"]}, "data": {"coreference_treebanks": []}},
     "config key 'syntax.coref_treebank': 'gum' is not in 'data.coreference_treebanks'"),
])
def test_typos_and_half_configured_treebanks_are_refused_before_any_job(change, fragment):
    config = one_model(tasks=[], wiki=False, glove=False)
    for key, value in change.items():
        config[key] = {**config.get(key, {}), **value}
    with pytest.raises(ConfigError) as info:
        study_of(config)
    assert fragment in str(info.value)


def test_a_task_folder_without_splits_asks_for_them(tmp_path):
    entry = {"path": str(tmp_path), "text": ["s"], "label": "l", "kind": "regression"}
    with pytest.raises(ConfigError, match=r"'tasks.mine.splits': .* is a folder; name the file of each split"):
        study_of({**one_model(tasks=["mine"]), "tasks": {"mine": entry}})


def test_a_tasks_own_annotator_brings_its_own_models_and_annotation_never_reruns_training(tmp_path):
    (tmp_path / "dev.csv").write_text("s,l\nGut.,1.5\n", encoding="utf-8")
    (tmp_path / "pos.pt").write_text("x", encoding="utf-8")
    english = {name: str(tmp_path / "pos.pt") for name in ("pos", "pos_pretrain", "depparse", "depparse_pretrain")}
    german = {"path": str(tmp_path / "dev.csv"), "text": ["s"], "label": "l", "kind": "regression", "language": "de",
              "pretokenized": True, "annotator": {"tool": "stanza", "stanza_dir": str(tmp_path)}}
    study = study_of({**one_model(tasks=["german"], wiki=False), "tasks": {"german": german},
                      "annotation": {"annotator": "stanza", "stanza_models": english}})
    settings = annotation_settings(study.config, study.corpora, "german")
    assert settings["annotator"] == "stanza:de" and settings["stanza_models"] is None
    assert settings["stanza_dir"] == str(tmp_path) and settings["pretokenized"] is True
    params = study.task_spec("german").params()
    assert not {"annotator", "pretokenized", "display"} & set(params) and params["language"] == "de"


def test_a_ud_split_of_several_files_is_one_mirror_candidate():
    from workflow_scripts.data.entries import treebank_entry

    entry = treebank_entry("hdt", {"ud": "UD_German-HDT", "language": "de",
                                   "splits": {"train": ["de_hdt-ud-train-a-1.conllu", "de_hdt-ud-train-a-2.conllu"]}},
                           treebank_splits=["train"])
    assert entry.mirror_candidates("train") == [["ud/UD_German-HDT/de_hdt-ud-train-a-1.conllu",
                                                 "ud/UD_German-HDT/de_hdt-ud-train-a-2.conllu"]]
