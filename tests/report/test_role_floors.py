"""Role agreement read against its floors (workflow_scripts/report/role_floors.py, docs/roles.md), with values known by
construction: the Spearman-Brown correction and the verdict's rules on scores set here, and the whole path from
hand-built attention dumps (tests/support/dumps.py) through the syntax stage's tables and the atlas to
role_agreement.csv, for a "fine-tuned" copy whose one dependency head moves its role, an identical copy, and a
relation scored on too few sentences to agree with itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from support.dumps import write_annotation, write_dump, write_word_index_tokens
from support.maps import token_maps
from workflow_scripts.report.atlas_halves import atlas_tables
from workflow_scripts.report.role_agreement import role_agreement, role_agreement_table
from workflow_scripts.report.role_floors import spearman_brown, verdict
from workflow_scripts.syntax.dependency import score_dependency_heads
from workflow_scripts.syntax.dependency_tables import summarise_dependency

FINETUNED = "det.seed1.final"


def test_spearman_brown_doubles_the_length_of_a_half_measure():
    assert spearman_brown(0.5) == pytest.approx(2 / 3)
    assert spearman_brown(1.0) == 1.0 and spearman_brown(0.0) == 0.0
    assert spearman_brown(-0.4) == -0.4 and np.isnan(spearman_brown(np.nan))  # no correction below 0


@pytest.mark.parametrize(("row", "expected"), [
    ({"rho": 0.2, "rho_low": 0.1, "rho_high": 0.3, "floor_rho": 0.9, "floor_low": 0.8}, "moved"),
    ({"rho": 0.7, "rho_low": 0.5, "rho_high": 0.85, "floor_rho": 0.9, "floor_low": 0.8}, "kept"),
    ({"rho": 0.95, "rho_low": 0.9, "rho_high": 1.0, "floor_rho": 0.9, "floor_low": 0.8}, "kept"),
    ({"rho": 0.1, "rho_low": 0.0, "rho_high": 0.2, "floor_rho": 0.4, "floor_low": 0.2}, "noisy"),
    ({"rho": 0.5, "rho_low": 0.4, "rho_high": 0.6, "floor_rho": np.nan, "floor_low": np.nan}, ""),
    ({"rho": np.nan, "rho_low": np.nan, "rho_high": np.nan, "floor_rho": 0.9, "floor_low": 0.8}, ""),
])
def test_the_verdict_reads_the_pair_against_the_floor(row, expected):
    assert verdict(row, noisy_below=0.5, same_weights=False) == expected
    assert verdict(row, noisy_below=0.5, same_weights=True) == "same weights"


def atlas_rows(checkpoint, scores, role="induction", detail="random_repeated"):
    layers, heads = scores.shape
    return pd.DataFrame({"model": "m", "checkpoint": checkpoint, "role": role, "detail": detail,
                         "layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers),
                         "score": scores.ravel(), "ci_low": scores.ravel() - 0.05, "ci_high": scores.ravel() + 0.05,
                         "num_layers": layers, "num_heads": heads})


def halves_rows(checkpoint, a, b, role="induction", detail="random_repeated"):
    rows = atlas_rows(checkpoint, a, role, detail)[["model", "checkpoint", "role", "detail", "layer", "head"]]
    return rows.assign(score_half_a=a.ravel(), score_half_b=b.ravel())


def test_floors_seed_floor_best_head_and_same_weights_on_scores_set_here():
    rng = np.random.default_rng(0)
    scores = rng.random((4, 6))
    noise = rng.normal(0, 0.02, scores.shape)
    twin = scores + rng.normal(0, 0.01, scores.shape)   # the same task's other seed
    atlas = pd.concat([atlas_rows("pretrained", scores), atlas_rows(FINETUNED, scores),
                       atlas_rows("det.seed2.final", twin)])
    halves = halves_rows("pretrained", scores + noise, scores - noise)
    pair = {"relation": "pretrained_vs_finetuned", "first_model": "m", "first_checkpoint": "pretrained",
            "second_model": "m", "second_checkpoint": FINETUNED, "task": "det", "seed_checkpoint": "det.seed2.final"}
    row = role_agreement(atlas, [pair], thresholds={}, resamples=200, seed=0, halves=halves).iloc[0]
    raw = spearmanr((scores + noise).ravel(), (scores - noise).ravel()).statistic
    assert row["split_half_rho"] == pytest.approx(raw) and row["floor_rho"] == pytest.approx(2 * raw / (1 + raw))
    assert row["floor_correction"] == "spearman-brown" and row["floor_low"] <= row["floor_rho"] <= row["floor_high"]
    assert row["seed_rho"] == pytest.approx(spearmanr(scores.ravel(), twin.ravel()).statistic)
    assert row["seed_checkpoint"] == "det.seed2.final" and row["verdict"] == "kept" and row["rho"] == 1.0
    best = np.unravel_index(np.argmax(scores), scores.shape)
    assert row["first_best"] == row["second_best"] == f"{best[0]}:{best[1]}" and bool(row["best_kept"])
    # the same head, the same score: no change, and an interval of sqrt(2) x each side's half-width
    half_width = 1.959963984540054 * np.sqrt(2) * 0.1 / (2 * 1.959963984540054)
    assert row["best_change"] == 0 and row["best_change_high"] == pytest.approx(half_width)
    # two checkpoints with the same weights are named so, never counted as kept
    same = role_agreement(atlas, [{**pair, "same_weights": True, "weights_note": "same weights (digest x)"}],
                          thresholds={}, resamples=50, seed=0, halves=halves).iloc[0]
    assert same["verdict"] == "same weights" and same["note"].startswith("same weights (digest x)")


# --- the syntax stage to role agreement, on dumps of a hand-set "model" and its "fine-tuned" copy --------------------

# "the cat sat on the mat" (tests/syntax/test_dependency.py's sentence): [CLS] the cat sat on the ma ##t [SEP]
WORDS = ["the", "cat", "sat", "on", "the", "mat"]
UPOS = ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]
HEADS = [1, 2, -1, 5, 5, 2]
DEPRELS = ["det", "nsubj", "root", "case", "det", "obl"]
TOKEN_WORD = [-1, 0, 1, 2, 3, 4, 5, 5, -1]
LAYERS = HEADS_PER_LAYER = 4


def relation_maps(relations_of_head: dict[int, str]) -> np.ndarray:
    """(4, 4, T, T): head k's words of relation ``relations_of_head[k]`` attend to their gold head; every other word
    of every head attends to no word (the [SEP]), so that a head is right on its relation alone."""
    maps = np.zeros((LAYERS * HEADS_PER_LAYER, len(TOKEN_WORD), len(TOKEN_WORD)))
    for k in range(LAYERS * HEADS_PER_LAYER):
        relation = relations_of_head.get(k)
        targets = [[HEADS[w]] if relation == DEPRELS[w] and HEADS[w] >= 0 else [] for w in range(len(WORDS))]
        maps[k] = token_maps(TOKEN_WORD, targets)
    return maps.reshape(LAYERS, HEADS_PER_LAYER, len(TOKEN_WORD), len(TOKEN_WORD))


# The pretrained "model": det on head 0:0 (layer 0, head 0), nsubj on 0:1, case on 1:2, obl on 2:3.
PRETRAINED = {0: "det", 1: "nsubj", 6: "case", 11: "obl"}
# The "fine-tuned" copy: det moves from 0:0 to 3:1; every other head as it was.
MOVED = {13: "det", 1: "nsubj", 6: "case", 11: "obl"}


def summarise(tmp_path, maps: dict[str, dict[int, np.ndarray]], n_sentences: int) -> dict:
    """Score every checkpoint's dump (pretrained: train and dev; the fine-tuned copy: dev alone, as roles.finetuned
    dumps it) and write the syntax tables, then the atlas, its halves and the role agreement."""
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {i: TOKEN_WORD for i in range(n_sentences)})
    annotation = write_annotation(tmp_path / "annotation.parquet",
                                  {i: (WORDS, UPOS, HEADS, DEPRELS) for i in range(n_sentences)})
    parts = {}
    for checkpoint, examples in maps.items():
        dump = write_dump(tmp_path / checkpoint / "dump", examples, n_shards=1).parent
        part = tmp_path / checkpoint / "dev.parquet"
        score_dependency_heads(dump, tokens, annotation, part, max_offset=3)
        splits = ("train", "dev") if checkpoint == "pretrained" else ("dev",)
        parts.update({("m", checkpoint, "ewt", split): part for split in splits})
    tables = {name: tmp_path / f"{name}.csv" for name in ("dependency_heads", "dependency_best", "dependency_halves")}
    summarise_dependency(parts, tables["dependency_heads"], tables["dependency_best"],
                         halves_output=tables["dependency_halves"], relations=["all", "det", "nsubj", "case", "obl"],
                         select_split="train", score_split="dev", resamples=100, seed=0)
    models = tmp_path / "models.csv"
    pd.DataFrame({"name": ["m"], "model_type": ["bert"], "num_layers": [LAYERS],
                  "num_heads": [HEADS_PER_LAYER]}).to_csv(models, index=False)
    atlas_tables(models, tmp_path / "atlas.csv", tmp_path / "atlas_halves.csv", family_of=lambda _: "bert",
                 tables=tables, treebank="ewt", select_split="train", score_split="dev")
    pairs = [{"relation": "pretrained_vs_finetuned", "first_model": "m", "first_checkpoint": "pretrained",
              "second_model": "m", "second_checkpoint": FINETUNED, "task": "det"}]
    table = role_agreement_table(tmp_path / "atlas.csv", tmp_path / "role_agreement.csv", pairs=pairs, thresholds={},
                                 resamples=200, seed=0, halves=tmp_path / "atlas_halves.csv")
    return {"agreement": table.set_index("detail"), "atlas": pd.read_csv(tmp_path / "atlas.csv"),
            "halves": pd.read_csv(tmp_path / "atlas_halves.csv")}


def test_a_fine_tuned_copy_whose_det_head_moved_moves_that_role_alone(tmp_path):
    maps = {"pretrained": {i: relation_maps(PRETRAINED) for i in range(6)},
            FINETUNED: {i: relation_maps(MOVED) for i in range(6)}}
    found = summarise(tmp_path, maps, 6)
    rows = found["agreement"]
    accuracy = rows[rows["role"] == "dependency_accuracy"]
    assert set(accuracy.index) == {"all", "det", "nsubj", "case", "obl"}
    # det: its head moved from 0:0 to 3:1, beyond the floor (every sentence alike: the floor is 1), and is named lost
    det = accuracy.loc["det"]
    assert det["verdict"] == "moved" and det["floor_rho"] == 1.0 and det["rho_high"] < det["floor_low"]
    assert (det["first_best"], det["second_best"], bool(det["best_kept"])) == ("0:0", "3:1", False)
    # 0:0 now attends to no word: the first other word, right for half the det words, is what it predicts
    assert det["lost_heads"] == "0:0" and det["best_change"] == pytest.approx(-0.5)
    # every other relation: the same heads, kept, nothing lost
    for relation in ("nsubj", "case", "obl"):
        assert accuracy.loc[relation, "verdict"] == "kept" and accuracy.loc[relation, "lost_heads"] == ""
        assert bool(accuracy.loc[relation, "best_kept"]) and accuracy.loc[relation, "best_change"] == 0
    # the fine-tuned copy's best heads were selected and scored on dev: no best-head row of its own is compared again
    assert not (rows["role"] == "dependency").any()
    note = rows.loc[rows["role"].isna() | (rows["role"] == ""), "note"]
    assert note.empty or not note.str.contains("dependency ").any()
    # the rho of every relation equals Spearman's of the atlas's scores; the floor, of the atlas's halves
    atlas, halves = found["atlas"], found["halves"]
    for relation, row in accuracy.iterrows():
        def scores(checkpoint, rel=relation):
            part = atlas[(atlas["checkpoint"] == checkpoint) & (atlas["role"] == "dependency_accuracy")
                         & (atlas["detail"] == rel)]
            return part.set_index(["layer", "head"])["score"].sort_index()
        expected = spearmanr(scores("pretrained"), scores(FINETUNED)).statistic
        assert row["rho"] == pytest.approx(expected, nan_ok=True)
        first = halves[(halves["checkpoint"] == "pretrained") & (halves["detail"] == relation)]
        raw = spearmanr(first["score_half_a"], first["score_half_b"]).statistic
        assert row["split_half_rho"] == pytest.approx(raw, nan_ok=True)


def test_an_identical_copy_keeps_every_role_and_loses_no_head(tmp_path):
    same = {i: relation_maps(PRETRAINED) for i in range(6)}
    rows = summarise(tmp_path, {"pretrained": same, FINETUNED: same}, 6)["agreement"]
    compared = rows[rows["heads"].notna()]
    assert set(compared["verdict"]) == {"kept"} and (compared["rho"] == 1.0).all()
    assert (compared["lost_heads"].fillna("") == "").all() and compared["best_kept"].astype(bool).all()


def test_a_relation_that_does_not_agree_with_itself_across_halves_is_noisy(tmp_path):
    """case is found by head 1:2 in the even sentences and by head 1:3 in the odd ones: the two halves of the
    sentences rank the heads differently, so the floor is below 0.5, whatever the pair's rho."""
    odd = {**PRETRAINED, 6: None, 7: "case"}
    examples = {i: relation_maps(PRETRAINED if i % 2 == 0 else odd) for i in range(6)}
    rows = summarise(tmp_path, {"pretrained": examples, FINETUNED: examples}, 6)["agreement"]
    case = rows[rows["role"] == "dependency_accuracy"].loc["case"]
    assert case["split_half_rho"] < 0 and case["floor_rho"] < 0.5 and case["verdict"] == "noisy"
    assert case["rho"] == 1.0  # the two checkpoints agree perfectly: the role still cannot be read on this data
    assert rows[rows["role"] == "dependency_accuracy"].loc["det", "verdict"] == "kept"
