"""Head diagnostics on synthetic sequences (workflow_scripts/surface/diagnostics.py): scores of hand-made maps, and a
GPT-2 whose weights make a previous-token head and an induction head, found by the scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.induction_gpt2 import save_induction_gpt2
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.surface.diagnostics import (
    Settings,
    candidate_ids,
    diagnose,
    natural_rows,
    sequence_scores,
    sink_rates,
    token_rows,
    with_special_tokens,
)

SETTINGS = Settings(sequences=12, length=8, seed=0, token_range=(5, 48), prepend_bos=None, batch_size=5)


def test_scores_of_hand_made_maps():
    offset, length = 1, 3
    n = offset + 2 * length  # BOS, a b c, a b c
    induction = np.zeros((n, n))
    induction[:, 0] = 1.0
    for i in range(offset + length, n):  # the second copy looks at the token after its earlier occurrence
        induction[i] = 0
        induction[i, i - length + 1] = 1.0
    duplicate = np.zeros((n, n))
    duplicate[np.arange(n), np.arange(n)] = 1.0
    for i in range(offset + length, n):
        duplicate[i] = 0
        duplicate[i, i - length] = 1.0
    scores = sequence_scores(np.stack([induction, duplicate])[None, None], offset, length)  # 1 row, 1 layer
    assert scores["induction"][0, 0].tolist() == [1.0, 0.0]
    assert scores["duplicate"][0, 0].tolist() == [0.0, 1.0]
    # head 0: queries 1..3 look at position 0, queries 4..6 do not; head 1 never looks back one
    assert scores["first_token"][0, 0].tolist() == pytest.approx([3 / 6, 0.0])
    assert scores["previous_token"][0, 0].tolist() == pytest.approx([1 / 6, 0.0])  # only query 1 looks at 0


def test_rows_of_each_kind(tiny_roberta):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)
    candidates = candidate_ids(tokenizer, (0, 20))
    assert not set(candidates) & set(tokenizer.all_special_ids) and candidates.max() == 19
    rng = np.random.default_rng(0)
    repeated = token_rows("random_repeated", candidates, 4, 5, rng)
    assert repeated.shape == (4, 10) and (repeated[:, :5] == repeated[:, 5:]).all()
    one = token_rows("one_token", candidates, 3, 5, rng)
    assert (one == one[:, :1]).all()
    ids, offset = with_special_tokens(tokenizer, repeated, None)  # RoBERTa's template: <s> ... </s>
    assert offset == 1 and ids.shape == (4, 12) and (ids[:, 0] == tokenizer.bos_token_id).all()
    assert with_special_tokens(tokenizer, repeated, False)[1] == 0
    bos, offset = with_special_tokens(tokenizer, repeated, True)
    assert offset == 1 and bos.shape == (4, 11)
    with pytest.raises(AtlasError, match="surface.diagnostics.token_range"):
        candidate_ids(tokenizer, (10, len(tokenizer) + 1))


@pytest.fixture(scope="module")
def induction_model(tmp_path_factory, tiny_roberta):
    from transformers import AutoModel, AutoTokenizer

    folder = save_induction_gpt2(tmp_path_factory.mktemp("induction-gpt2"), tiny_roberta)
    return AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder, attn_implementation="eager").eval()


def test_the_scores_find_the_previous_token_head_and_the_induction_head(induction_model):
    tokenizer, model = induction_model
    frame = diagnose(tokenizer, model, SETTINGS, resamples=100, bootstrap_seed=0)
    heads = frame.set_index(["input", "layer", "head"])
    repeated = heads.loc["random_repeated"]
    assert repeated.loc[(0, 0), "previous_token"] > 0.95                    # layer 0, head 0
    assert repeated.loc[(1, 0), "induction"] > 0.8                          # layer 1, head 0
    others = [index for index in repeated.index if index != (1, 0)]
    assert repeated.loc[others, "induction"].max() < 0.25
    assert repeated.loc[[(0, 1), (1, 0), (1, 1)], "previous_token"].max() < 0.5
    # without a repetition there is nothing to match: the induction head's score is low
    assert heads.loc[("random", 1, 0), "induction"] < 0.25
    # the weightless heads spread evenly over the causal prefix: alpha_1 is the mean of 1/(i+1)
    n = int(repeated["tokens_per_sequence"].iloc[0])
    assert repeated.loc[(0, 1), "first_token"] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, n)]), rel=1e-4)
    assert (frame["first_token_low"] <= frame["first_token"] + 1e-12).all()
    assert set(frame["prepend_bos"]) == {"tokenizer"} and set(frame["length"]) == {8}
    assert set(frame["input"]) == {"random", "random_repeated", "one_token"}  # no natural text given
    # Gu et al.'s code counts query 0 too: a weightless head's alpha over every query is the mean of 1/(i+1) for
    # i >= 0, the same in every sequence
    alpha = np.mean([1 / (i + 1) for i in range(n)])
    assert repeated.loc[(0, 1), "sink_share"] == (1.0 if alpha > 0.3 else 0.0)


def test_sink_rates_follow_gu_et_al_s_code_and_the_mean_alpha_beside_it():
    # two heads per layer; sink_share: the share of sequences in which the head's alpha (every query) exceeds 0.3
    diagnostics = pd.DataFrame({"model": "m", "checkpoint": "pretrained", "input": "random",
                                "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "sink_share": [1.0, 0.5, 0.25, 0.0],
                                "first_token": [0.9, 0.31, 0.3, 0.1], "sink_threshold": 0.3, "n_sequences": 4})
    rates = sink_rates(diagnostics).set_index(["input", "layer"])
    assert rates.loc[("random", 0), "sink_rate"] == 75.0
    assert rates.loc[("random", "all"), "sink_rate"] == pytest.approx(100 * 1.75 / 4)
    assert rates.loc[("random", 1), "sink_rate_mean_alpha"] == 0.0  # 0.3 is not above the threshold
    assert rates.loc[("random", "all"), "sink_rate_mean_alpha"] == 50.0


def test_natural_text_is_cut_to_the_length_of_the_others(tmp_path, tiny_roberta):
    from transformers import AutoTokenizer

    from support.dumps import write_token_table

    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)
    long, short = list(range(10, 30)), list(range(10, 14))
    table = write_token_table(tmp_path / "tokens.parquet", {0: ["t"] * 22, 1: ["t"] * 6, 2: ["t"] * 22},
                              {i: [True] + [False] * (n - 2) + [True] for i, n in ((0, 22), (1, 6), (2, 22))},
                              {0: [0, *long, 2], 1: [0, *short, 2], 2: [0, *long[::-1], 2]})
    ids, offset = natural_rows(table, tokenizer, sequences=5, length=4, prepend_bos=None)
    assert offset == 1 and ids.tolist() == [[0, *long[:8], 2], [0, *long[::-1][:8], 2]]  # example 1 is too short
