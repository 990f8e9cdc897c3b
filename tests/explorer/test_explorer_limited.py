"""The explorer's example maps on a corpus limited by ``attention.max_examples``: the token table and dumps hold
only the first examples, and configured example ids beyond them are left out, which the page says."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from support.dumps import write_dump, write_token_table
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.io import write_table
from workflow_scripts.explorer.example_maps import example_maps
from workflow_scripts.explorer.page import explorer_data

KEPT = 3  # attention.max_examples: examples 0..2 of the split's 6


def _inputs(tmp_path, limit: int | None):
    """A token table and two dumps (pretrained, fine-tuned) of the first KEPT examples; ``limit`` goes into the
    token table's metadata as the token_table rule writes it."""
    tokens = {i: ["[CLS]", *[f"w{k}" for k in range(4 + i)], "[SEP]"] for i in range(KEPT)}
    path = write_token_table(tmp_path / "tokens.parquet", tokens,
                             {i: [t.startswith("[") for t in ts] for i, ts in tokens.items()})
    write_table(pq.read_table(path), path, {"max_examples": limit, "examples": KEPT})
    rng = np.random.default_rng(0)
    dumps = []
    for checkpoint in ("pretrained", "cola.seed1.final"):
        maps = {i: rng.dirichlet(np.ones(len(t)), size=(2, 2, len(t))).astype(np.float32) for i, t in tokens.items()}
        write_dump(tmp_path / checkpoint, maps)
        dumps.append((checkpoint, checkpoint, tmp_path / checkpoint))
    return dumps, path


def _maps(dumps, tokens, example_ids, count=2):
    return example_maps(dumps, tokens, count=count, max_tokens=40, example_ids=example_ids, budget_bytes=10**7,
                        corpus="cola", split="dev")


def test_configured_ids_beyond_the_kept_examples_are_left_out_and_the_page_says_so(tmp_path, caplog):
    dumps, tokens = _inputs(tmp_path, limit=KEPT)
    with caplog.at_level("WARNING", logger="workflow_scripts.explorer.example_maps"):
        limited = _maps(dumps, tokens, [1, 4])
    note = ("Example ids [4] (explorer.example_ids) are not among the 3 examples that attention.max_examples (3) "
            "keeps: left out.")
    assert limited["note"] == note and note in caplog.text
    # The maps are those of the ids the corpus holds, as if only they had been configured.
    assert limited["sentences"] == _maps(dumps, tokens, [1])["sentences"]
    assert [s["example_id"] for s in limited["sentences"]] == [1]
    # No configured id left: the examples are chosen as without ids (the first `count` short enough ones).
    none_left = _maps(dumps, tokens, [4, 5])
    assert [s["example_id"] for s in none_left["sentences"]] == [0, 1]
    assert none_left["sentences"] == _maps(dumps, tokens, None)["sentences"]
    assert none_left["note"].endswith("left out, examples [0, 1] drawn instead.")
    data = explorer_data("tiny", {"models": _models(tmp_path)}, pattern_parts=[], relations=["all"],
                         select_split="train", examples=limited)
    assert note in data["notes"]


def test_without_a_limit_a_missing_id_is_still_refused(tmp_path):
    dumps, tokens = _inputs(tmp_path, limit=None)
    with pytest.raises(AtlasError, match=r"example ids \[4\] are not in the token table"):
        _maps(dumps, tokens, [1, 4])
    assert "note" not in _maps(dumps, tokens, [1])


def _models(tmp_path):
    path = tmp_path / "models.csv"
    path.write_text("name,num_layers,num_heads\ntiny,2,2\n")
    return path
