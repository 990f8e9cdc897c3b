"""The found-heads check: which heads it reads, their random partners, the probe under ablation, the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workflow_scripts.ablation.found_heads import (
    COREFERENCE,
    PROBE_TARGET,
    AblatedFeatures,
    pair_found_heads,
    probe_rows,
    random_same_layer_head,
    read_found_heads,
    run_found_heads,
)
from workflow_scripts.ablation.tables import FOUND_HEADS_COLUMNS
from workflow_scripts.core.errors import AtlasError, InputFormatError

VOCABULARY = ["the", "a", "cat", "dog", "dogs", "sat", "walked", "on", "mat", "big", "red", "house", "sees", ".", ","]
PROBE = {"epochs": 4, "lr": 0.1, "seed": 0, "batch_sentences": 8, "exclude_punct": True}
SETTINGS = {"max_length": 32, "max_dev_examples": None}


def _best_tables(tmp_path, layer_of_all=1):
    rows = []
    for checkpoint in ("pretrained", "random"):
        for select in ("train", "dev"):
            rows += [
                {"relation": "all", "direction": "dependent_to_head", "layer": layer_of_all, "head": 0},
                {"relation": "nsubj", "direction": "dependent_to_head", "layer": 0, "head": 0},
                {"relation": "nsubj", "direction": "either", "layer": 0 if select == "train" else 1, "head": 1},
                {"relation": "nsubj", "direction": "head_to_dependent", "layer": 1, "head": 1},
            ]
            for row in rows[-4:]:
                row.update(model="tiny", checkpoint=checkpoint, treebank="tb", select_split=select, score_split="dev")
                if checkpoint == "random":
                    row["head"] = 1 - row["head"]
    dependency = tmp_path / "dependency_best.csv"
    pd.DataFrame(rows).to_csv(dependency, index=False)
    coref = tmp_path / "coref_best.csv"
    pd.DataFrame([
        {"model": "tiny", "checkpoint": "pretrained", "select_documents": "all", "method": "head",
         "mention_type": "all", "layer": 1.0, "head": 1.0},
        {"model": "tiny", "checkpoint": "pretrained", "select_documents": "all", "method": "nearest_mention",
         "mention_type": "all", "layer": None, "head": None},
        {"model": "tiny", "checkpoint": "pretrained", "select_documents": "a", "method": "head",
         "mention_type": "all", "layer": 0.0, "head": 0.0},
    ]).to_csv(coref, index=False)
    return dependency, coref


def test_the_pretrained_best_heads_are_read_per_relation_and_coreference(tmp_path):
    dependency, coref = _best_tables(tmp_path)
    found = read_found_heads(dependency, coref, model="tiny", treebank="tb", relations=["all", "nsubj", "obj"],
                             select_split="train", score_split="dev")
    # 'all' has dependent->head only; nsubj's best head looks either way; obj has no row; coreference: all docs.
    assert found == [("all", 1, 0), ("nsubj", 0, 1), (COREFERENCE, 1, 1)]
    same_split = read_found_heads(dependency, None, model="tiny", treebank="tb", relations=["nsubj"],
                                  select_split="dev", score_split="dev")
    assert same_split == [("nsubj", 1, 1)]


def test_bad_tables_name_the_file_and_the_fix(tmp_path):
    dependency, coref = _best_tables(tmp_path)
    pd.read_csv(dependency).drop(columns=["direction"]).to_csv(tmp_path / "old.csv", index=False)
    with pytest.raises(InputFormatError, match=r"old\.csv: columns \['direction'\] are missing.*syntax stage"):
        read_found_heads(tmp_path / "old.csv", None, model="tiny", treebank="tb", relations=["all"],
                         select_split="train", score_split="dev")
    with pytest.raises(AtlasError, match=r"dependency_best\.csv: no row of model 'other'"):
        read_found_heads(dependency, None, model="other", treebank="tb", relations=["all"], select_split="train",
                         score_split="dev")
    found = read_found_heads(dependency, coref, model="tiny", treebank="tb", relations=["all"],
                             select_split="train", score_split="dev")
    with pytest.raises(AtlasError, match=r"dependency_best\.csv: the 'all' head \(layer 1, head 0, 0-based\) is not "
                                         r"a head of this model \(1 layers x 2 heads\)"):
        pair_found_heads(found, 1, 2, 0, dependency)


def test_the_random_head_is_another_head_of_the_same_layer(tmp_path):
    for seed in range(50):
        for layer, head in ((0, 0), (3, 11), (5, 6)):
            partner = random_same_layer_head(layer, head, 12, seed)
            assert 0 <= partner < 12 and partner != head
            assert partner == random_same_layer_head(layer, head, 12, seed)  # fixed by the seed
    assert len({random_same_layer_head(2, 3, 12, seed) for seed in range(50)}) > 5
    paired = pair_found_heads([("det", 2, 8), ("nsubj", 2, 8), (COREFERENCE, 4, 1)], 6, 12, 7, "t.csv")
    assert paired[0].random_head == paired[1].random_head  # the same found head, the same partner
    assert all(p.random_head != p.head for p in paired)
    with pytest.raises(AtlasError, match="one head per layer"):
        random_same_layer_head(0, 0, 1, 0)


def _treebank(tmp_path, name, n_sentences, seed):
    """A data table and gold annotation: random words, each headed by the next word (the last is the root)."""
    from workflow_scripts.attention.annotate import ANNOTATION_SCHEMA
    from workflow_scripts.data.tables import text_task_schema

    rng = np.random.default_rng(seed)
    texts, rows = [], {n: [] for n in ANNOTATION_SCHEMA.names}
    for example_id in range(n_sentences):
        words = [str(w) for w in rng.choice(VOCABULARY, size=int(rng.integers(3, 9)))]
        starts = np.concatenate([[0], np.cumsum([len(w) + 1 for w in words])[:-1]]).tolist()
        texts.append(" ".join(words))
        values = {"example_id": example_id, "annotator": "gold", "words": words, "lemmas": words,
                  "upos": ["PUNCT" if w in ".," else "X" for w in words],
                  "head": list(range(1, len(words))) + [-1], "deprel": ["dep"] * len(words),
                  "segment": [0] * len(words), "char_start": starts,
                  "char_end": [s + len(w) for s, w in zip(starts, words)]}
        for key, value in values.items():
            rows[key].append(value)
    data = tmp_path / f"{name}.parquet"
    pq.write_table(pa.Table.from_pydict({"example_id": list(range(n_sentences)),
                                         "source_id": [str(i) for i in range(n_sentences)], "text_a": texts,
                                         "text_b": [None] * n_sentences, "label": [None] * n_sentences},
                                        schema=text_task_schema(False)), data)
    annotation = tmp_path / f"{name}.annotation.parquet"
    pq.write_table(pa.Table.from_pydict(rows, schema=ANNOTATION_SCHEMA), annotation)
    return data, annotation


@pytest.fixture
def probe_inputs(tiny_bert, tmp_path):
    """Token tables, dumps and probe features of a tiny treebank's train and dev splits, as the workflow makes
    them (build_token_table, extract_attention, build_probe_features), with the pretrained tiny model."""
    from transformers import AutoTokenizer

    from support.tiny_models import write_manifest
    from workflow_scripts.attention.extract import extract_attention
    from workflow_scripts.attention.texts import TEXT
    from workflow_scripts.attention.tokens import build_token_table
    from workflow_scripts.probing.features import build_probe_features

    manifest = write_manifest(tmp_path / "pretrained", tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    paths = {"pretrained": manifest}
    for split, count, seed in (("train", 30, 0), ("dev", 12, 1)):
        data, annotation = _treebank(tmp_path, split, count, seed)
        tokens, _ = build_token_table(tokenizer, data, annotation, 64, max_examples=None, input_protocol=TEXT)
        pq.write_table(tokens, tmp_path / f"{split}.tokens.parquet")
        extract_attention(manifest, tmp_path / f"{split}.tokens.parquet", tmp_path / f"dump-{split}", n_shards=2,
                          batch_size=3, max_batch_tokens=10_000, device="cpu", threads=1, offline=True,
                          compression="lz4", implementation="eager")
        build_probe_features(tmp_path / f"dump-{split}", tmp_path / f"{split}.tokens.parquet", annotation,
                             tmp_path / f"{split}.maps.npy", tmp_path / f"{split}.index.npz", seed=0)
        paths.update({f"{split}_tokens": tmp_path / f"{split}.tokens.parquet", f"{split}_annotation": annotation,
                      f"{split}_maps": tmp_path / f"{split}.maps.npy",
                      f"{split}_index": tmp_path / f"{split}.index.npz"})
    return paths


def test_unablated_features_and_uas_reproduce_the_probe_stage(probe_inputs, tmp_path):
    from workflow_scripts.ablation.heads import HeadAblation, load_ablatable
    from workflow_scripts.attention.annotate import read_trees
    from workflow_scripts.core.io import read_metadata
    from workflow_scripts.probing.features import GloveLookup, ProbeFeatures, probe_sentences
    from workflow_scripts.probing.model import FeatureSource
    from workflow_scripts.syntax.probes.training import run_attention_probe

    p = probe_inputs
    run_attention_probe("attn", p["train_maps"], p["train_index"], p["dev_maps"], p["dev_index"],
                        p["train_annotation"], p["dev_annotation"], None, tmp_path / "attn.parquet",
                        exclude_punct=True, threads=1, **{k: v for k, v in PROBE.items() if k != "exclude_punct"})
    stage_uas = read_metadata(tmp_path / "attn.parquet")["uas"]
    found = pair_found_heads([("all", 1, 0)], 2, 2, 0, "t.csv")
    rows = probe_rows("tiny", found, ["zero", "first"], pretrained=p["pretrained"], train_maps=p["train_maps"],
                      train_index=p["train_index"], train_annotation=p["train_annotation"],
                      test_tokens=p["dev_tokens"], test_annotation=p["dev_annotation"], probe=PROBE, batch_size=4,
                      device="cpu", threads=1, offline=True)
    assert len(rows) == 2 and {r["target"] for r in rows} == {PROBE_TARGET}
    assert rows[0]["baseline"] == stage_uas
    assert all(r["delta"] == r["ablated"] - r["baseline"] for r in rows)

    # The recomputed unablated features are the cached ones (float16 rounding of a differently padded batch aside).
    cached = ProbeFeatures.load(p["dev_maps"], p["dev_index"])
    _, model = load_ablatable(p["pretrained"], offline=True)
    sentences = probe_sentences(read_trees(p["dev_annotation"]), cached.example_ids, cached.has_unit_of(),
                                GloveLookup(None), exclude_punct=True,
                                cache_index={int(e): i for i, e in enumerate(cached.example_ids)})
    with HeadAblation(model) as ablation:
        source = AblatedFeatures(ablation, model, p["dev_tokens"], cached.example_ids, cached.n_words,
                                 device="cpu", batch_size=5)
        recomputed = FeatureSource("attn", source.features(frozenset(), None)).raw(sentences)[0].float()
        expected = FeatureSource("attn", cached).raw(sentences)[0].float()
        np.testing.assert_allclose(recomputed.numpy(), expected.numpy(), rtol=0, atol=1e-3)
        ablated = FeatureSource("attn", source.features(frozenset({(1, 0)}), "zero")).raw(sentences)[0].float()
        assert not ablation.heads  # each variant leaves the model unablated
    # Head (1, 0) disabled with 'zero': its features are 0; every head of layer 0 is as cached.
    assert not ablated[:, 2].any()
    np.testing.assert_allclose(ablated[:, :2].numpy(), expected[:, :2].numpy(), rtol=0, atol=1e-3)


def test_the_found_heads_table_compares_each_head_with_its_random_partner(probe_inputs, tiny_classifier, tiny_dev,
                                                                             tiny_task, tmp_path):
    p = probe_inputs
    dependency, coref = _best_tables(tmp_path)
    frame = run_found_heads(
        dependency_best=dependency, coref_best=coref, pretrained=p["pretrained"], finetuned=[tiny_classifier],
        dev=[tiny_dev], tasks=[tiny_task], settings=[SETTINGS], train_maps=p["train_maps"],
        train_index=p["train_index"], train_annotation=p["train_annotation"], test_tokens=p["dev_tokens"],
        test_annotation=p["dev_annotation"], output=tmp_path / "found_heads.csv", model="tiny", treebank="tb",
        relations=["all", "nsubj"], select_split="train", score_split="dev", modes=["zero", "mean"],
        max_examples=8, batch_size=4, device="cpu", threads=1, random_seed=3, offline=True, mirror=None,
        probe=PROBE)
    written = pd.read_csv(tmp_path / "found_heads.csv")
    assert list(written.columns) == FOUND_HEADS_COLUMNS and len(written) == len(frame) == 3 * 2 * 2
    assert set(written["target"]) == {PROBE_TARGET, "task:sst2"} and set(written["mode"]) == {"zero", "mean"}
    assert list(dict.fromkeys(written["source"])) == ["all", "nsubj", COREFERENCE]
    layers = written["head_label"].str.split("-").str[0]
    assert (written["random_head_label"].str.split("-").str[0] == layers).all()
    assert (written["random_head_label"] != written["head_label"]).all()
    np.testing.assert_allclose(written["delta"], written["ablated"] - written["baseline"])
    np.testing.assert_allclose(written["random_delta"], written["random_ablated"] - written["baseline"])
    assert set(written.loc[written["target"] == "task:sst2", "n"]) == {8}
    for target, part in written.groupby("target"):
        assert part["baseline"].nunique() == 1, target  # one unablated score per target
