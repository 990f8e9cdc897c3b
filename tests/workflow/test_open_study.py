"""End to end on corpora that are config entries of the researcher's own: the real Snakemake DAG on a tiny
study of a French treebank (accents, the multi-word token du = de + le), a Chinese one written without
spaces (fed as written: attention.input_protocol text), a CorefUD-style coreference file, and a local CSV
task (tests/support/open_corpora.py writes them all, with a tiny BERT that knows their words).

One build; then the promises of a finished study: a second run plans nothing, adding a task or a treebank
entry plans only its branch (and the study-wide tables), and bad entries fail before any job, naming the key
(or, for what only the whole file shows, the data job names the file and the line).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from support.open_corpora import (
    COREFUD_MENTIONS,
    FR,
    FR_ACCENTS,
    ZH,
    csv_task_entry,
    save_open_bert,
    write_csv_task,
    write_open_study,
)
from support.workflow_runs import config_of as study_config
from support.workflow_runs import planned_outputs, snakemake, with_config
from workflow_scripts.core.io import read_metadata

pytestmark = pytest.mark.e2e


def config_of(work: Path) -> dict:
    return study_config(work, "open.yaml")


@pytest.fixture(scope="module")
def built(open_study) -> Path:
    """The study, built once per session from its start (``open_study`` of tests/conftest.py)."""
    return open_study


@pytest.fixture(scope="module")
def unbuilt(tmp_path_factory) -> Path:
    """The same study written but never run: for the checks that fail before any job."""
    work = tmp_path_factory.mktemp("open-unbuilt")
    return write_open_study(work, save_open_bert(work / "model"))


def table(work: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(work / "results" / "tables" / f"{name}.csv")


def tokens_of(work: Path, corpus: str, split: str) -> pd.DataFrame:
    return pq.read_table(work / "results" / "tokens" / "tiny" / corpus / f"{split}.parquet").to_pandas()


def words_of(work: Path, folder: str, corpus: str, split: str) -> list[list[str]]:
    return [list(w) for w in pq.read_table(work / "results" / folder / corpus / f"{split}.parquet")["words"]
            .to_pylist()]


# --- 1. a French treebank: accents, a multi-word token, a language -----------------------------------------


def test_a_french_treebank_entry_is_built_aligned_and_analysed(built):
    best = table(built, "dependency_best")
    assert {"all", "det", "nsubj", "obj"} <= set(best.loc[best["treebank"] == "fr", "relation"])
    summary = table(built, "data_summary")
    rows = {(c, s): (n, lang) for c, s, n, lang in zip(summary["corpus"], summary["split"], summary["rows"],
                                                      summary["language"])}
    # Two train files (train-*.conllu) read as one split; the entry's language is the table's.
    assert rows[("fr", "train")] == (5, "fr") and rows[("fr", "dev")] == (3, "fr")
    assert rows[("zh", "dev")] == (3, "zh") and rows[("mycsv", "dev")][1] == "en"
    data = pq.read_table(built / "results" / "data" / "fr" / "dev.parquet").to_pandas()
    assert data["text"][0] == FR_ACCENTS[0] and list(data["words"][0]) == [w[0] for w in FR_ACCENTS[1]]

    tokens = tokens_of(built, "fr", "dev")
    assert read_metadata(built / "results" / "tokens" / "tiny" / "fr" / "dev.parquet")["input_protocol"] == "text"
    first = tokens[tokens.example_id == 0]
    by_word = first[first.word_index >= 0].groupby("word_index")["token"].apply(list).to_dict()
    # "Le député a visité le musée.": every word has a token, and the accented words are kept whole.
    assert sorted(by_word) == list(range(len(FR_ACCENTS[1])))
    assert by_word[1] == ["député"] and by_word[3] == ["visité"] and by_word[5] == ["musée"]
    assert "[UNK]" not in set(tokens["token"])

    # "La fille du député dort.": du is the words de + le, in the data and annotation tables, on du's span.
    annotation = pq.read_table(built / "results" / "annotation" / "fr" / "dev.parquet").to_pandas()
    assert list(annotation["words"][1])[2:4] == ["de", "le"] and set(annotation["annotator"]) == {"gold"}
    assert list(data["mwt"][1])[2:4] == [0, 0] and list(data["char_start"][1])[2:4] == [9, 9]
    second = tokens[tokens.example_id == 1]
    assert second.loc[second.token == "du", "word_index"].tolist() == [2]  # a tie goes to the first word
    # So, fed as written, le has no token of its own and is skipped: 'all' scores the other 18 of 19 dev words.
    n_all = best.loc[(best["treebank"] == "fr") & (best["relation"] == "all"), "n"]
    assert set(n_all) == {sum(len(words) for _, words, *_ in FR["dev.conllu"]) - 1}

    dumps = table(built, "attention_dumps")
    assert {"fr/train", "fr/dev", "zh/train", "zh/dev"} <= set(dumps["corpus"] + "/" + dumps["split"])
    assert (built / "results" / "figures" / "syntax" / "best_head_maps_tiny_pretrained_fr.png").is_file()


# --- 2. a treebank written without spaces, fed as written ---------------------------------------------------


def test_a_treebank_written_without_spaces_gets_a_token_for_every_word(built):
    for split, sentences in (("train", ZH["train.conllu"]), ("dev", ZH["dev.conllu"])):
        data = pq.read_table(built / "results" / "data" / "zh" / f"{split}.parquet").to_pandas()
        assert list(data["text"]) == [text for text, _ in sentences]
        tokens = tokens_of(built, "zh", split)
        for example_id, words in enumerate(words_of(built, "annotation", "zh", split)):
            aligned = set(tokens.loc[(tokens.example_id == example_id) & (tokens.word_index >= 0), "word_index"])
            assert aligned == set(range(len(words))), (split, example_id, words)
        assert "[UNK]" not in set(tokens["token"])
    dev = tokens_of(built, "zh", "dev")
    # 她喜欢小狗。: the tokenizer splits CJK characters, so the two-character word 小狗 has two tokens.
    assert dev.loc[(dev.example_id == 1) & (dev.word_index == 2), "token"].tolist() == ["小", "狗"]
    best = table(built, "dependency_best")
    assert {"all", "det", "nsubj", "obj"} <= set(best.loc[best["treebank"] == "zh", "relation"])
    assert set(best["input_protocol"]) == {"text"}
    assert "zh" in set(table(built, "probes")["treebank"])


# --- 3. CorefUD coreference in a treebank entry ------------------------------------------------------------


def test_a_corefud_treebank_gives_mentions_windows_and_coreference_heads(built):
    mentions = pq.read_table(built / "results" / "data" / "corefud" / "dev.mentions.parquet").to_pandas()
    assert list(zip(mentions["entity"], mentions["head_form"])) == COREFUD_MENTIONS
    assert set(mentions["chain_size"]) == {2} and list(mentions["doc_id"]).count("doc2") == 2
    windows = pq.read_table(built / "results" / "data" / "corefudwin" / "dev.parquet").to_pandas()
    assert len(windows) == 2  # one window per document: neither reaches coref_window_words
    for name in ("coref_heads", "coref_best"):
        assert len(table(built, name)) > 0, name


# --- 4. a local CSV task ---------------------------------------------------------------------------------


def test_a_local_csv_task_is_read_fine_tuned_and_scored(built):
    metrics = table(built, "finetune_metrics")
    accuracy = metrics[(metrics["task"] == "mycsv") & (metrics["metric"] == "accuracy")]
    assert len(accuracy) == 1 and 0 <= accuracy["value"].iloc[0] <= 1
    dev = pq.read_table(built / "results" / "data" / "mycsv" / "dev.parquet").to_pandas()
    # labels: [negative, positive] are class ids 0 and 1; the rows alternate positive, negative.
    assert dev["label"].tolist() == [1, 0] * 4
    assert dev["source_id"].tolist() == [f"dev{i}" for i in range(8)]
    assert "mycsv" in set(table(built, "pattern_classes")["task"])


# --- 5. rerun promises on the finished study --------------------------------------------------------------

# Pages that gather every table: they are rebuilt whenever a table is (the explorer reads the study tables).
STUDY_WIDE = ("results/tables/", "results/figures/", "results/logs/", "results/explorer/")


def corpus_branch(name: str, *stage_outputs: str) -> re.Pattern:
    """The outputs a new corpus entry ``name`` adds: its data, annotation, tokens and attention, and the stages'
    ``stage_outputs`` (patterns under results/)."""
    own = [f"data/{name}/", f"annotation/{name}/", f"tokens/[^/]+/{name}/", f"attention/[^/]+/[^/]+/{name}/"]
    return re.compile(f"results/({'|'.join([*own, *stage_outputs])})")


def assert_plans_only_its_branch(built: Path, config: dict, branch: re.Pattern, planned: set[str], entry: str
                                 ) -> None:
    """The dry run of ``config`` on the built study plans ``planned``, and nothing that is neither in ``branch`` nor
    study-wide (what the new ``entry`` would rebuild for nothing)."""
    result = with_config(built, config, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = planned_outputs(result)
    assert planned <= outputs
    stray = {o for o in outputs if not (branch.match(o) or o.startswith(STUDY_WIDE))}
    assert not stray, f"outputs outside the new {entry}'s branch would be rebuilt: {sorted(stray)}"


def test_a_second_run_plans_nothing(built):
    result = snakemake(built, "--dry-run", configfile="open.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_adding_a_csv_task_entry_plans_only_its_branch(built):
    write_csv_task(built / "corpora" / "second")
    config = config_of(built)
    config["tasks"]["second"] = csv_task_entry(built / "corpora" / "second")
    config["study"]["tasks"] = ["mycsv", "second"]
    branch = corpus_branch("second", r"checkpoints/[^/]+/second\.", r"finetune/[^/]+/second\.",
                           r"analysis/finetune_effects/[^/]+/[^/]+/second/", r"analysis/finetune_effects/tiny/[^/]+$",
                           # its heads disabled; the found heads are ablated in every fine-tuned task
                           r"analysis/ablation/[^/]+/second\.", r"analysis/ablation/[^/]+/found_heads\.csv$")
    assert_plans_only_its_branch(built, config, branch, {
        "results/data/second/train.parquet", "results/data/second/dev.parquet",
        "results/checkpoints/tiny/second.seed42.final/checkpoint.json",
        "results/analysis/finetune_effects/tiny/second.seed42.final/second/pattern_classes.csv"}, "task")


def test_adding_a_treebank_entry_plans_only_its_branch(built):
    config = config_of(built)
    config["treebanks"]["de"] = {"path": str(built / "corpora" / "de"), "language": "de",
                                 "splits": {"train": "train.conllu", "dev": "dev.conllu"}}
    config["study"]["treebanks"] = [*config["study"]["treebanks"], "de"]
    config["syntax"]["treebanks"] = [*config["syntax"]["treebanks"], "de"]
    config["attention"]["corpora"]["de"] = ["train", "dev"]
    branch = corpus_branch(
        "de", r"analysis/syntax/[^/]+/[^/]+/(dependency/de_|dependency/shards/de_|probe_features/de_|probes/de/)",
        r"analysis/syntax/[^/]+/baselines/de/",
        # the found heads read the study-wide dependency_best table, which gains de's rows
        r"analysis/ablation/[^/]+/found_heads\.csv$")
    assert_plans_only_its_branch(built, config, branch, {
        "results/data/de/train.parquet", "results/tokens/tiny/de/dev.parquet",
        "results/analysis/syntax/tiny/pretrained/dependency/de_dev.parquet"}, "treebank")


# --- 6. bad entries: before any job, naming the key and the fix ------------------------------------------


def _unknown_field(config: dict, work: Path) -> None:
    config["treebanks"]["fr"]["colour"] = "blue"


def _missing_text_column(config: dict, work: Path) -> None:
    config["tasks"]["mycsv"]["path"] = str(work / "corpora" / "othercsv")  # its text column is 'phrase'


def _glob_matches_nothing(config: dict, work: Path) -> None:
    config["treebanks"]["zh"]["splits"]["dev"] = "nothing-*.conllu"


def _undefined_task(config: dict, work: Path) -> None:
    config["study"]["tasks"] = ["mycsv", "mycvs"]


@pytest.mark.parametrize(("change", "expected"), [
    (_unknown_field, ["config key 'treebanks.fr': unknown key(s) 'colour'", "allowed here:", "splits"]),
    (_missing_text_column, ["config key 'tasks.mycsv'", "no field(s) 'sentence' (fields: id, phrase, label)",
                             "set 'tasks.mycsv.text'"]),
    (_glob_matches_nothing, ["config key 'treebanks.zh.splits.dev'", "nothing-*.conllu", "fix the glob"]),
    (_undefined_task, ["config key 'study.tasks': 'mycvs' is not defined under 'tasks'", "add an entry 'tasks.mycvs'"]),
], ids=["unknown-field", "missing-text-column", "glob-matches-nothing", "undefined-task"])
def test_a_bad_entry_fails_before_any_job_naming_the_key_and_the_fix(unbuilt, change, expected):
    config = config_of(unbuilt)
    change(config, unbuilt)
    result = with_config(unbuilt, config, "--dry-run", name="bad.yaml")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Building DAG of jobs" not in output and "Job stats" not in output, output[-3000:]
    for text in expected:
        assert text in output, output[-3000:]
    assert not (unbuilt / "results").exists()


def test_a_label_outside_the_declared_set_fails_the_data_job_naming_the_file_and_line(unbuilt):
    folder = write_csv_task(unbuilt / "corpora" / "badlabel", bad_label_line=5)
    config = config_of(unbuilt)
    config["tasks"]["badlabel"] = csv_task_entry(folder)
    config["study"]["tasks"] = ["mycsv", "badlabel"]
    work = unbuilt / "label-run"  # its own results folder: the checks above expect none in `unbuilt`
    work.mkdir()
    # Before any job the entry is fine (its header has the fields); only reading the file shows the label.
    assert with_config(work, config, "--dry-run", name="badlabel.yaml").returncode == 0
    result = snakemake(work, "results/data/badlabel/dev.parquet", configfile="badlabel.yaml")
    assert result.returncode != 0
    log = (work / "results" / "logs" / "data" / "badlabel_dev.log").read_text(encoding="utf-8")
    expected = (f"{folder / 'dev.csv'}, line 5: task entry 'badlabel': label 'neutral' in field 'label' is not one "
                "of ['negative', 'positive'] (add it to tasks.badlabel.labels or fix the row)")
    assert expected in log, log[-3000:]
    assert not (work / "results" / "data" / "badlabel" / "dev.parquet").exists()
