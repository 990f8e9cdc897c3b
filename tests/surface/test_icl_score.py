"""The in-context learning score (workflow_scripts/surface/icl_score.py) on a one-layer GPT-2 language model whose
weights are set here: it predicts that the next token repeats the current one. On contexts whose later tokens repeat
(later positions easier by construction) the late loss is far below the early one; on contexts where no token
repeats its predecessor every position has the same loss, and the score is 0."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.dumps import write_token_table
from support.tiny_models import write_manifest
from workflow_scripts.surface.icl_score import (
    COLUMNS,
    icl_positions,
    icl_score,
    icl_score_part,
    natural_contexts,
)

CODED, WIDTH = 63, 64  # ids 0..62 have a one-hot code, balanced by a -1 in the last dimension
EARLY, LATE = icl_positions(32)


def save_repeat_predictor(directory, tokenizer_dir):
    """GPT-2 with no attention or MLP output: the stream is the token's code, and the untied LM head reads the code
    of token t as a logit for t: the next token is predicted to be the current one."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=WIDTH, n_layer=1, n_head=1, n_positions=64,
                        tie_word_embeddings=False, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        for norm in (model.transformer.ln_f, model.transformer.h[0].ln_1, model.transformer.h[0].ln_2):
            norm.weight.fill_(1.0)
        for token in range(CODED):
            model.transformer.wte.weight[token, token] = 1.0
            model.transformer.wte.weight[token, CODED] = -1.0
            model.lm_head.weight[token, token] = 1.0
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def predictor(tmp_path_factory, tiny_roberta):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = save_repeat_predictor(tmp_path_factory.mktemp("repeat-gpt2"), tiny_roberta)
    return folder, AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder).eval()


def contexts(repeat_from: int | None, rows: int = 24, length: int = LATE + 1, seed: int = 0) -> np.ndarray:
    """Rows of distinct ids (no token repeats its predecessor); from ``repeat_from`` on, one id repeated."""
    rng = np.random.default_rng(seed)
    out = np.stack([rng.permutation(np.arange(5, CODED))[:length] for _ in range(rows)])
    if repeat_from is not None:
        out[:, repeat_from:] = out[:, [repeat_from]]
    return out.astype(np.int64)


def test_positions_scale_olsson_et_al_s_tokens_50_and_500_with_max_length():
    assert icl_positions(1024) == (50, 500)
    assert icl_positions(2048) == (100, 1000)
    assert icl_positions(512) == (25, 250)
    assert icl_positions(32) == (2, 16)
    with pytest.raises(ValueError, match="no late position"):
        icl_positions(2)


def test_later_positions_made_easier_give_a_negative_score_and_no_easier_ones_zero(predictor):
    _, _, model = predictor
    easier = icl_score(model, contexts(repeat_from=8), early=EARLY, late=LATE, batch_size=5, resamples=200, seed=0)
    # late tokens repeat their predecessor: predicted; early ones do not
    assert easier["late_loss"] < 1.0 < 5.0 < easier["early_loss"]
    assert easier["icl_score"] == pytest.approx(easier["late_loss"] - easier["early_loss"])
    assert easier["icl_score"] < -4.0 and easier["icl_high"] < 0 and easier["examples"] == 24
    flat = icl_score(model, contexts(repeat_from=None), early=EARLY, late=LATE, batch_size=5, resamples=200, seed=0)
    assert flat["icl_score"] == pytest.approx(0.0, abs=1e-4)
    assert flat["early_loss"] == pytest.approx(flat["late_loss"], rel=1e-5) and flat["early_loss"] > 5.0


def test_the_natural_text_is_one_stream_cut_into_contexts(tmp_path, predictor):
    _, tokenizer, _ = predictor
    # examples of 5 and 8 text tokens between <s> and </s>: the stream is 5 + 8 + 8 = 21 tokens, two pieces of 8
    texts = {0: list(range(10, 15)), 1: list(range(20, 28)), 2: list(range(30, 38))}
    ids = {i: [0, *text, 2] for i, text in texts.items()}
    table = write_token_table(tmp_path / "tokens.parquet", {i: ["t"] * len(v) for i, v in ids.items()},
                              {i: [True] + [False] * (len(v) - 2) + [True] for i, v in ids.items()}, ids)
    found = natural_contexts(table, tokenizer, late=7, contexts=5, prepend_bos=False)
    assert found.tolist() == [[10, 11, 12, 13, 14, 20, 21, 22], [23, 24, 25, 26, 27, 30, 31, 32]]
    # the tokenizer's BOS first: positions count it, the context stays late + 1 tokens
    with_bos = natural_contexts(table, tokenizer, late=7, contexts=1, prepend_bos=None)
    assert with_bos.tolist() == [[tokenizer.bos_token_id, 10, 11, 12, 13, 14, 20, 21]]


def test_the_table_row_of_a_decoder_and_of_an_encoder(tmp_path, predictor, tiny_bert):
    folder, _, _ = predictor
    # each example: 12 distinct ids, then one id 5 times; after <s>, position 16 is a repeat, position 2 is not
    rows = contexts(repeat_from=12, rows=6, length=LATE + 1, seed=1)
    ids = {i: [0, *row.tolist(), 2] for i, row in enumerate(rows)}
    table = write_token_table(tmp_path / "tokens.parquet", {i: ["t"] * len(v) for i, v in ids.items()},
                              {i: [True] + [False] * (len(v) - 2) + [True] for i, v in ids.items()}, ids)
    settings = {"series": "tiny", "revision": "step100", "step": 100, "max_length": 32, "contexts": 8,
                "batch_size": 4, "prepend_bos": None, "resamples": 100, "bootstrap_seed": 0, "threads": 1,
                "offline": True}
    manifest = write_manifest(tmp_path / "decoder", folder)
    frame = icl_score_part(manifest, table, tmp_path / "icl.csv", model="tiny-step100", checkpoint="pretrained",
                           **settings)
    row = pd.read_csv(tmp_path / "icl.csv").iloc[0]
    assert list(frame.columns) == COLUMNS
    assert (row["early_position"], row["late_position"], row["examples"], row["step"]) == (2, 16, 6, 100)
    assert row["icl_score"] < -4.0 and pd.isna(row["note"])
    encoder = icl_score_part(write_manifest(tmp_path / "encoder", tiny_bert), table, tmp_path / "enc.csv",
                             model="bert", checkpoint="pretrained", **settings).iloc[0]
    assert np.isnan(encoder["icl_score"]) and "no decoder" in encoder["note"] and encoder["examples"] == 0
