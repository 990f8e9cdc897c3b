"""The syntax analyses and figures on a corpus limited by ``attention.max_examples``.

The dump and token table hold only the first N examples, the annotation (the trees) and the mention table all
of them: every result must equal the one computed from just those N, and a figure may draw only a sentence
that the dump holds. Inputs are hand-built (tests/support/dumps.py): 8 gold sentences, the first 4 dumped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.dumps import write_annotation, write_dump, write_word_index_tokens
from support.maps import token_maps
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.windows import WINDOW_MENTION_SCHEMA
from workflow_scripts.probing.features import ProbeFeatures, build_probe_features
from workflow_scripts.syntax import figures
from workflow_scripts.syntax.coreference import score_coreference_heads
from workflow_scripts.syntax.dependency import ALL, score_dependency_heads
from workflow_scripts.syntax.dependency_tables import summarise_dependency

HELD = 4  # attention.max_examples: the dump and token table keep examples 0..3 of 8
RELATIONS = [ALL, "det", "case"]

# "the cat sat on the mat" (6 words, too short to be chosen for the figure when a longer one is there).
SHORT = (["the", "cat", "sat", "on", "the", "mat"], [1, 2, -1, 5, 5, 2], ["det", "nsubj", "root", "case", "det", "obl"])
# The same sentence twice (12 words), the second clause a parataxis of the first: det and case, both relations.
LONG = (SHORT[0] * 2, SHORT[1] + [h + 6 if h >= 0 else 2 for h in SHORT[1]],
        SHORT[2] + [d if d != "root" else "parataxis" for d in SHORT[2]])
# 12 words with det but no case: the best sentence the dump holds scores 1 of the 2 relations.
LONG_NO_CASE = (LONG[0], LONG[1], [d if d != "case" else "advmod" for d in LONG[2]])
# A label no dumped sentence has: in the relation vocabulary of the full annotation only.
LONG_POSS = (LONG[0], LONG[1], [d if d != "obl" else "nmod:poss" for d in LONG[2]])
# Sentence 2 (dumped) is the only long one the dump holds; sentence 4 (not dumped) has more relations: the first
# choice on the full annotation, which the dump does not hold.
SENTENCES = {0: SHORT, 1: SHORT, 2: LONG_NO_CASE, 3: SHORT, 4: LONG, 5: SHORT, 6: LONG_POSS, 7: LONG}


def _token_word(n_words: int) -> list[int]:
    """[CLS] w0 .. w(n-1) [SEP]; the last word of a 6-word sentence is split into two tokens."""
    return [-1, *range(n_words), *([n_words - 1] if n_words == 6 else []), -1]


def _maps(words: list[str], heads: list[int]) -> np.ndarray:
    """(2 layers, 2 heads): the gold-head map and the next-word map, in both orders."""
    token_word = _token_word(len(words))
    gold = token_maps(token_word, [[h] if h >= 0 else [] for h in heads])
    following = token_maps(token_word, [[w + 1] if w + 1 < len(words) else [] for w in range(len(words))])
    return np.array([[gold, following], [following, gold]])


def _annotation(path: Path, ids) -> Path:
    return write_annotation(path, {i: (SENTENCES[i][0], ["X"] * len(SENTENCES[i][0]), SENTENCES[i][1],
                                       SENTENCES[i][2]) for i in ids})


@pytest.fixture
def limited(tmp_path) -> dict[str, Path]:
    """A dump and token table of the first HELD sentences, the annotation of all of them and of those only."""
    held = range(HELD)
    return {
        "dump": write_dump(tmp_path / "dump", {i: _maps(*SENTENCES[i][:2]) for i in held}, n_shards=1).parent,
        "tokens": write_word_index_tokens(tmp_path / "tokens.parquet",
                                          {i: _token_word(len(SENTENCES[i][0])) for i in held}),
        "full": _annotation(tmp_path / "full.parquet", SENTENCES),
        "kept": _annotation(tmp_path / "kept.parquet", held),
        "dir": tmp_path,
    }


def _tables(paths: dict[str, Path], annotation: str) -> tuple[pa.Table, Path]:
    """The dump's score part with the given annotation, and the dependency_best table summarised from it."""
    folder = paths["dir"] / annotation
    folder.mkdir()
    part = folder / "part.parquet"
    score_dependency_heads(paths["dump"], paths["tokens"], paths[annotation], part, max_offset=3)
    parts = {("m", c, "ewt", s): part for c in ("pretrained", "random") for s in ("train", "dev")}
    summarise_dependency(parts, folder / "heads.csv", folder / "best.csv", relations=RELATIONS,
                         select_split="train", score_split="dev", resamples=20, seed=0)
    return pq.read_table(part), folder


def test_dependency_scores_and_tables_of_a_limited_dump_are_those_of_its_sentences(limited):
    full, full_dir = _tables(limited, "full")
    kept, kept_dir = _tables(limited, "kept")
    assert sorted(set(full["example_id"].to_pylist())) == list(range(HELD))
    assert full.equals(kept)
    for name in ("heads.csv", "best.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(full_dir / name), pd.read_csv(kept_dir / name))


def _drawn(paths: dict[str, Path], annotation: str, monkeypatch, example_id: int | None) -> dict:
    """What best_head_maps draws (suptitle, panel titles, images) with the dump's best heads."""
    folder = paths["dir"] / "kept"
    if not folder.exists():
        _tables(paths, "kept")
    drawn = {}

    def record(figure, png, pdf=None):
        axes = [ax for ax in figure.axes if ax.axison]
        drawn.update(title=figure._suptitle.get_text(), panels=[ax.get_title() for ax in axes],
                     images=[np.asarray(ax.get_images()[0].get_array()) for ax in axes])

    monkeypatch.setattr(figures, "save_figure", record)
    figures.best_head_maps(paths["dump"], paths["tokens"], paths[annotation], folder / "best.csv",
                           paths["dir"] / "maps.png", None, model="m", checkpoint="pretrained", relations=RELATIONS,
                           select_split="train", score_split="dev", example_id=example_id, treebank="ewt")
    return drawn


def test_best_head_maps_draw_a_sentence_the_limited_dump_holds(limited, monkeypatch, caplog):
    # On the full annotation alone, the figure's choice is sentence 4, which the dump does not hold (KeyError: 4
    # before the choice was limited to the dump's sentences).
    trees = {i: (s[0], None, s[1], s[2]) for i, s in SENTENCES.items()}
    assert figures.choose_sentence(trees, RELATIONS) == 4
    with caplog.at_level("INFO", logger="workflow_scripts.syntax.figures"):
        full = _drawn(limited, "full", monkeypatch, None)
    assert "full sentence 2:" in full["title"]
    assert "sentence chosen among the 4 of 8 sentences the dump holds (attention.max_examples)" in full["title"]
    assert "sentence 2 chosen among the 4 of 8" in caplog.text
    # The same figure as on an annotation of the dumped sentences only (which says nothing about a limit).
    kept = _drawn(limited, "kept", monkeypatch, None)
    assert "kept sentence 2:" in kept["title"] and "chosen" not in kept["title"]
    # Sentence 2 has det but no case: a panel for each relation it has.
    assert full["panels"] == kept["panels"] and [t.split(":")[0] for t in kept["panels"]] == [ALL, "det"]
    for one, other in zip(full["images"], kept["images"]):
        np.testing.assert_array_equal(one, other)


def test_a_configured_sentence_the_dump_does_not_hold_is_replaced_and_the_figure_says_so(limited, monkeypatch,
                                                                                          caplog):
    with caplog.at_level("WARNING", logger="workflow_scripts.syntax.figures"):
        drawn = _drawn(limited, "full", monkeypatch, 6)
    note = "sentence 6 (syntax.figure_example_id) is not in the dump: sentence 2 chosen among the 4 of 8 sentences"
    assert "full sentence 2:" in drawn["title"] and note in drawn["title"] and note in caplog.text
    held = _drawn(limited, "full", monkeypatch, 1)
    assert "full sentence 1:" in held["title"] and "chosen" not in held["title"]
    with pytest.raises(AtlasError, match="example 99, the sentence to draw, is not in"):
        _drawn(limited, "full", monkeypatch, 99)


def test_probe_features_of_a_limited_dump_are_those_of_its_sentences(limited):
    outputs = {}
    for annotation in ("full", "kept"):
        maps, index = limited["dir"] / f"{annotation}.npy", limited["dir"] / f"{annotation}.npz"
        build_probe_features(limited["dump"], limited["tokens"], limited[annotation], maps, index, seed=0)
        outputs[annotation] = ProbeFeatures.load(maps, index)
    full, kept = outputs["full"], outputs["kept"]
    assert full.example_ids.tolist() == list(range(HELD))
    for name in ("example_ids", "n_words", "offsets", "has_unit", "maps"):
        np.testing.assert_array_equal(getattr(full, name), getattr(kept, name))


# --- coreference: the mention table holds every window, the dump the first ones ---------------------------------

WORDS = ["John", "met", "Mary", ".", "He", "liked", "her"]
MENTIONS = [(0, "1"), (2, "2"), (4, "1"), (6, "2")]  # John Mary He(->John) her(->Mary)


def _mentions(windows: list[int]) -> pd.DataFrame:
    return pd.DataFrame([{"mention_id": 10 * w + m, "example_id": w, "doc_id": f"d{w}", "entity": entity,
                          "sentence_id": 0, "start": head, "end": head + 1, "head": head, "head_form": WORDS[head],
                          "head_upos": "PRON" if head > 3 else "PROPN", "etype": "person", "infstat": "giv"}
                         for w in windows for m, (head, entity) in enumerate(MENTIONS)])


def test_coreference_scores_of_a_limited_dump_are_those_of_its_windows(tmp_path):
    token_word = [-1, *range(len(WORDS)), -1]
    antecedent = token_maps(token_word, [{4: [0], 6: [2]}.get(w, []) for w in range(len(WORDS))])
    dump = write_dump(tmp_path / "dump", {w: np.array([[antecedent]]) for w in range(2)}, n_shards=1).parent
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {w: token_word for w in range(2)})
    annotation = write_annotation(tmp_path / "annotation.parquet",
                                  {w: (WORDS, ["X"] * 7, [-1] * 7, ["root"] * 7) for w in range(4)})
    results = {}
    for name, windows in (("full", [0, 1, 2, 3]), ("kept", [0, 1])):
        mentions = tmp_path / f"{name}_mentions.parquet"
        pq.write_table(pa.Table.from_pandas(_mentions(windows), schema=WINDOW_MENTION_SCHEMA, preserve_index=False),
                       mentions)
        score_coreference_heads(dump, tokens, annotation, mentions, tmp_path / f"{name}.parquet")
        results[name] = pq.read_table(tmp_path / f"{name}.parquet")
        results[name + "_meta"] = read_metadata(tmp_path / f"{name}.parquet")
    assert results["full"].equals(results["kept"]) and len(results["full"]) == 4
    # The counts say what was read: the mentions of the dumped windows, not of the whole mention table.
    for key in ("windows", "mentions", "mentions_with_antecedent", "mentions_scored"):
        assert results["full_meta"][key] == results["kept_meta"][key], key
    assert results["full_meta"]["mentions"] == 8
