"""The treebank and mention builders: from a mirror, offline without one, and on a bad file."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from support.conllu import tok, write_conllu
from support.entries import UD, UD_SOURCE
from workflow_scripts.core.errors import InputFormatError, SourceUnavailableError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_mentions, build_treebank

# --- builders -------------------------------------------------------------------------------


def test_build_treebank_and_mentions_from_mirror(gum_file, tmp_path):
    treebank_out = tmp_path / "out" / "gum_dev.parquet"
    build_treebank(UD["gum"], "dev", [gum_file], treebank_out, mirror=str(tmp_path), offline=True,
                   download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    table = pq.read_table(treebank_out)
    assert table.num_rows == 4
    assert table["head"].to_pylist()[0] == [1, 4, 4, 4, -1, 4]
    meta = read_metadata(treebank_out)
    assert meta["corpus"] == "gum" and meta["split"] == "dev"
    assert meta["n_words"] == 6 + 8 + 5 + 3
    assert meta["source"] == f"mirror:{gum_file}"

    mentions_out = tmp_path / "out" / "gum_mentions_dev.parquet"
    build_mentions(UD["gum"], "dev", [gum_file], mentions_out, mirror=str(tmp_path), offline=True,
                   download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    mentions = pq.read_table(mentions_out)
    assert mentions.num_rows == 8
    meta = read_metadata(mentions_out)
    assert meta["corpus"] == "gum_mentions"
    # (doc1, 1..6) and (doc2, 1)
    assert meta["n_entities"] == 7
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.endswith(".partial")] == []


def test_build_treebank_offline_without_mirror(tmp_path):
    with pytest.raises(SourceUnavailableError) as info:
        build_treebank(UD["ewt"], "train", [], tmp_path / "ewt.parquet", mirror=None, offline=True,
                       download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    message = str(info.value)
    assert "corpus 'ewt', split 'train'" in message
    assert ("https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/r2.16/"
            "en_ewt-ud-train.conllu (skipped: 'offline' is true)") in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message
    assert not (tmp_path / "ewt.parquet").exists()
    assert not (tmp_path / "dl").exists()


def test_build_mentions_offline_with_mirror_lacking_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(SourceUnavailableError) as info:
        build_mentions(UD["gum"], "test", [], tmp_path / "m.parquet", mirror=str(mirror), offline=True,
                       download_dir=tmp_path / "dl", ud_tag="r2.15", **UD_SOURCE)
    message = str(info.value)
    assert "corpus 'gum', split 'test'" in message
    assert f"mirror {mirror / 'ud/UD_English-GUM/en_gum-ud-test.conllu'}" in message
    assert "UD_English-GUM/r2.15/en_gum-ud-test.conllu" in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message


def test_build_treebank_bad_file_leaves_no_output(tmp_path):
    bad = write_conllu(tmp_path / "bad.conllu", ["# text = A b", tok(1, "A", head=0), tok(2, "c", head=1)])
    out = tmp_path / "out" / "t.parquet"
    with pytest.raises(InputFormatError, match="line 3"):
        build_treebank(UD["ewt"], "dev", [bad], out, mirror=None, offline=True, download_dir=tmp_path,
                       ud_tag="r2.16", **UD_SOURCE)
    assert not out.exists()
    assert not any(p.name.endswith(".partial") for p in tmp_path.rglob("*"))
