"""A two-layer GPT-2 whose weights are set by hand: head 0 of layer 0 attends to the previous token and copies its
identity into the residual stream; head 0 of layer 1 attends to the token after the current token's earlier
occurrence (an induction head). Head 1 of each layer has no weights: it spreads its attention evenly.

The residual stream holds one-hot codes, each balanced by a -1 so that every vector has mean 0 (GPT-2's layer norm
then only rescales it): the token (TOKEN_CODES dims + 1), the position (POSITIONS + 1), and the previous token
written by layer 0 (TOKEN_CODES + 1). Ids from TOKEN_CODES up have no code: only smaller ids may be drawn.
"""

from __future__ import annotations

from pathlib import Path

TOKEN_CODES = 48   # ids 0..47 (special tokens included) have a code
POSITIONS = 32
WIDTH, HEADS = 144, 2
TOKEN, TOKEN_BALANCE = 0, TOKEN_CODES
POSITION, POSITION_BALANCE = TOKEN_CODES + 1, TOKEN_CODES + 1 + POSITIONS
PREVIOUS, PREVIOUS_BALANCE = POSITION_BALANCE + 1, POSITION_BALANCE + 1 + TOKEN_CODES
SHARPNESS = 3.0  # query and key scale: scores of about 20-30 where a key matches, 0 elsewhere
SINK_QUERY = 60.0  # the sink head's constant query: a score of about 20 on the BOS, 0 elsewhere


def save_induction_gpt2(directory: Path, tokenizer_dir: Path, *, sink: bool = False) -> Path:
    """The model above; with ``sink``, head 1 of layer 1 is an attention sink instead of weightless: a constant query
    (its bias) meets a key only the first token's code (the BOS) gives, so every query attends to the first token."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    assert PREVIOUS_BALANCE < WIDTH
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=WIDTH, n_layer=2, n_head=HEADS, n_positions=POSITIONS,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id)
    model = GPT2Model(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        for norm in (model.ln_f, *(block.ln_1 for block in model.h), *(block.ln_2 for block in model.h)):
            norm.weight.fill_(1.0)
        for token in range(TOKEN_CODES):
            model.wte.weight[token, TOKEN + token] = 1.0
            model.wte.weight[token, TOKEN_BALANCE] = -1.0
        for position in range(POSITIONS):
            model.wpe.weight[position, POSITION + position] = 1.0
            model.wpe.weight[position, POSITION_BALANCE] = -1.0
        # GPT-2's Conv1D: output = input @ weight; c_attn's columns are [query | key | value], head 0 first.
        previous = model.h[0].attn
        for position in range(POSITIONS):
            previous.c_attn.weight[POSITION + position, position] = SHARPNESS           # query: my position
            if position + 1 < POSITIONS:
                previous.c_attn.weight[POSITION + position, WIDTH + position + 1] = SHARPNESS  # key: my position + 1
        for token in range(TOKEN_CODES):
            previous.c_attn.weight[TOKEN + token, 2 * WIDTH + token] = 1.0              # value: my token
        previous.c_attn.weight[TOKEN_BALANCE, 2 * WIDTH + TOKEN_CODES] = 1.0
        scale = (4.0 / WIDTH) ** 0.5  # the layer norm divided the codes by the stream's standard deviation
        for token in range(TOKEN_CODES):
            previous.c_proj.weight[token, PREVIOUS + token] = scale
        previous.c_proj.weight[TOKEN_CODES, PREVIOUS_BALANCE] = scale
        induction = model.h[1].attn
        for token in range(TOKEN_CODES):
            induction.c_attn.weight[TOKEN + token, token] = SHARPNESS                   # query: my token
            induction.c_attn.weight[PREVIOUS + token, WIDTH + token] = SHARPNESS        # key: the token before me
        if sink:
            head = WIDTH // HEADS  # head 1's first query and key column
            induction.c_attn.bias[head] = SINK_QUERY                                      # query: always the same
            induction.c_attn.weight[TOKEN + tokenizer.bos_token_id, WIDTH + head] = SHARPNESS  # key: am I the BOS
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
