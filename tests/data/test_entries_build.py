"""Treebank and task entries through their data builders: sources (UD, local globs, URL), formats, metadata."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from support.entries import UD_SOURCE, local_treebank
from workflow_scripts.core.errors import SourceUnavailableError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_task, build_treebank
from workflow_scripts.data.entries import TaskSpec, task_spec, treebank_entry, ud_file_name

MALT = "Pierre\tNNP\t2\nVinken\tNNP\t3\nsleeps\tVBZ\t0\n.\t.\t3\n\n"
CONLLX = "1\tSie\tsie\tPRON\tPPER\t_\t2\tnsubj\t_\t_\n2\tschläft\tschlafen\tVERB\tVVFIN\t_\t0\troot\t_\t_\n\n"


def test_a_ud_entry_follows_ud_file_names_and_release_urls():
    assert ud_file_name("UD_German-GSD", "de", "train") == "de_gsd-ud-train.conllu"
    entry = treebank_entry("gsd", {"ud": "UD_German-GSD", "language": "de", "release": "r2.15"},
                           treebank_splits=["train", "dev"])
    assert entry.splits == {"train": ("de_gsd-ud-train.conllu",), "dev": ("de_gsd-ud-dev.conllu",)}
    assert entry.mirror_candidates("dev") == [["ud/UD_German-GSD/de_gsd-ud-dev.conllu"]]
    assert entry.urls("dev", "r2.16", UD_SOURCE["ud_url"]) == [
        "https://raw.githubusercontent.com/UniversalDependencies/UD_German-GSD/r2.15/de_gsd-ud-dev.conllu"]
    assert (entry.format, entry.tagset, entry.labelled) == ("conllu", "upos", True)


def test_a_local_malt_tab_treebank_reads_every_file_of_its_globs_in_order(tmp_path):
    for name in ("wsj_0002.dp", "wsj_0001.dp", "wsj_0160.dp"):
        (tmp_path / name).write_text(MALT.replace("Pierre", name[4:8]), encoding="utf-8")
    entry = local_treebank("ptb", tmp_path, {"train": ["wsj_00*.dp"], "dev": "wsj_01*.dp"}, format="malt_tab")
    assert [p.name for p in entry.local_files("train")] == ["wsj_0001.dp", "wsj_0002.dp"]
    out = tmp_path / "out" / "train.parquet"
    build_treebank(entry, "train", entry.local_files("train"), out, mirror=None, offline=True,
                   download_dir=tmp_path / "dl",
                       ud_tag="r2.16", **UD_SOURCE)
    table = pq.read_table(out).to_pydict()
    assert table["example_id"] == [0, 1] and [w[0] for w in table["words"]] == ["0001", "0002"]
    assert table["head"][0] == [1, 2, -1, 2] and table["upos"][0] == ["PROPN", "PROPN", "VERB", "PUNCT"]
    assert table["deprel"][0] == ["_"] * 4 and table["text"][0] == "0001 Vinken sleeps ."
    meta = read_metadata(out)
    assert meta["format"] == "malt_tab" and meta["labelled"] is False and meta["language"] == "en"
    assert "2 files, wsj_0001.dp .. wsj_0002.dp" in meta["source"]


def test_a_url_treebank_is_downloaded_once_and_refused_offline(tmp_path):
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "de-dev.conllx").write_text(CONLLX, encoding="utf-8")
    entry = treebank_entry("de", {"url": (tmp_path / "remote").as_uri(), "format": "conllx", "language": "de",
                                  "splits": {"dev": "de-dev.conllx"}}, treebank_splits=["dev"])
    out = tmp_path / "out.parquet"
    with pytest.raises(SourceUnavailableError, match=r"'offline' is true"):
        build_treebank(entry, "dev", [], out, mirror=None, offline=True, download_dir=tmp_path / "dl",
                       ud_tag="r2.16", **UD_SOURCE)
    build_treebank(entry, "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl",
                   ud_tag="r2.16", **UD_SOURCE)
    assert [p.name for p in (tmp_path / "dl").rglob("*.conllx")] == ["de-dev.conllx"]  # under the URL's path
    table = pq.read_table(out).to_pydict()
    assert table["words"] == [["Sie", "schläft"]] and table["head"] == [[1, -1]] and table["upos"][0][1] == "VERB"
    assert read_metadata(out)["language"] == "de"


def test_a_local_csv_task_entry_builds_its_table_and_a_missing_file_names_the_key(tmp_path):
    (tmp_path / "dev.csv").write_text("review,stars\nGreat.,pos\nAwful.,neg\n", encoding="utf-8")
    spec = task_spec("mine", {"path": str(tmp_path), "splits": {"dev": "dev.csv", "train": "train.csv"},
                              "text": ["review"], "label": "stars", "kind": "classification", "labels": ["neg", "pos"],
                              "language": "fr"})
    assert TaskSpec.from_params(spec.params()) == spec
    build_task(spec, "dev", spec.local_files("dev"), tmp_path / "dev.parquet", offline=True)
    table = pq.read_table(tmp_path / "dev.parquet").to_pydict()
    assert table["text_a"] == ["Great.", "Awful."] and table["label"] == [1, 0] and table["text_b"] == [None, None]
    assert read_metadata(tmp_path / "dev.parquet")["language"] == "fr"
    with pytest.raises(SourceUnavailableError, match=r"train.csv is not a file \(fix 'tasks.mine.path' or "
                                                     r"'tasks.mine.splits.train'\)"):
        build_task(spec, "train", spec.local_files("train"), tmp_path / "train.parquet", offline=True)
