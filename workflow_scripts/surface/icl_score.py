"""The in-context learning score of a causal language model (Olsson et al. 2022, "In-context Learning and Induction
Heads", section 2): the mean loss of a token late in the context minus the mean loss of a token early in it, over
contexts of natural text. Olsson et al. take tokens 50 and 500; here their positions scale with the model's
``max_length`` as if from a 1024-token context (GPT-2's): early = round(50 / 1024 * max_length), late =
round(500 / 1024 * max_length), so 50 and 500 at 1024, 100 and 1000 at 2048, 2 and 16 at 32 (positions counted from
0 in the model's input, a BOS the tokenizer puts first included; the loss of position p is -log P(token p | tokens
before p)). The table states both. A model that learns in context predicts later tokens better: its score is
negative (Olsson et al. see it fall from about 0 to about -0.4 nats during the phase change in which induction heads
form), and a model whose later tokens are no easier scores about 0.

The contexts are the surface corpus's text tokens (special tokens left out), example after example as one stream,
cut into consecutive pieces of late + 1 tokens, each given the special tokens the head diagnostics give their
natural rows (``prepend_bos``; only those before the text count, as nothing after position late changes its loss).
The score's 95% interval is the percentile bootstrap over contexts.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.stats import ratio_bootstrap_ci
from .diagnostics import with_special_tokens
from .statistics import read_example_columns

log = logging.getLogger(__name__)

EARLY_TOKEN, LATE_TOKEN, REFERENCE_CONTEXT = 50, 500, 1024  # Olsson et al.'s tokens, in GPT-2's context
COLUMNS = ["model", "checkpoint", "series", "revision", "step", "max_length", "early_position", "late_position",
           "early_loss", "late_loss", "icl_score", "icl_low", "icl_high", "examples", "contexts", "prepend_bos",
           "bootstrap_resamples", "bootstrap_seed", "note"]


def icl_positions(max_length: int) -> tuple[int, int]:
    """(early, late): Olsson et al.'s tokens 50 and 500 scaled from a 1024-token context to ``max_length``; early is
    at least 1 (position 0 has no loss) and late at most max_length - 1."""
    early = max(1, round(EARLY_TOKEN / REFERENCE_CONTEXT * max_length))
    late = min(max_length - 1, round(LATE_TOKEN / REFERENCE_CONTEXT * max_length))
    if late <= early:
        raise ValueError(f"max_length {max_length} leaves no late position after the early one ({early})")
    return early, late


def natural_contexts(token_table: str | Path, tokenizer: Any, *, late: int, contexts: int,
                     prepend_bos: bool | None) -> np.ndarray:
    """Up to ``contexts`` inputs of late + 1 tokens: the token table's text tokens as one stream, cut in consecutive
    pieces, each after the special tokens ``prepend_bos`` puts first."""
    stream = [columns["input_id"][~columns["special"]]
              for columns in read_example_columns(token_table, ["input_id", "special"]).values()]
    text = np.concatenate(stream) if stream else np.zeros(0, np.int64)
    pieces = min(contexts, len(text) // (late + 1))
    rows = text[:pieces * (late + 1)].reshape(pieces, late + 1)
    if pieces == 0:
        return np.zeros((0, late + 1), np.int64)
    ids, _ = with_special_tokens(tokenizer, rows, prepend_bos)
    return ids[:, :late + 1]


def position_losses(model: Any, input_ids: np.ndarray, positions: list[int], batch_size: int) -> np.ndarray:
    """(contexts, positions): -log P(token p | tokens before p) of each context at each position."""
    import torch

    index = torch.as_tensor(positions)
    out = []
    with torch.inference_mode():
        for start in range(0, len(input_ids), batch_size):
            ids = torch.as_tensor(input_ids[start:start + batch_size])
            logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[:, index - 1].float()
            target = ids[:, index]
            out.append((torch.logsumexp(logits, -1) - logits.gather(-1, target[..., None])[..., 0]).numpy())
    return np.concatenate(out).astype(np.float64) if out else np.zeros((0, len(positions)))


def icl_score(model: Any, input_ids: np.ndarray, *, early: int, late: int, batch_size: int, resamples: int,
              seed: int) -> dict[str, float]:
    """The mean early and late losses over the contexts, and the score (late - early) with its interval."""
    losses = position_losses(model, input_ids, [early, late], batch_size)
    score, low, high = ratio_bootstrap_ci(losses[:, 1] - losses[:, 0], np.ones(len(losses)), resamples=resamples,
                                          seed=seed)
    return {"early_loss": float(losses[:, 0].mean()) if len(losses) else np.nan,
            "late_loss": float(losses[:, 1].mean()) if len(losses) else np.nan,
            "icl_score": float(score), "icl_low": float(low), "icl_high": float(high), "examples": len(losses)}


def load_causal_lm(manifest_path: str | Path, *, offline: bool, dtype: str) -> tuple[Any, Any, str]:
    """(tokenizer, model with its LM head or None, why none) of a checkpoint."""
    import torch
    from transformers import AutoConfig, AutoTokenizer

    from ..models.checkpoints import read_manifest, weights_options
    from ..models.families import family_of, load_pretrained

    manifest = read_manifest(manifest_path)
    kwargs: dict[str, Any] = {"local_files_only": offline}
    if manifest.get("revision"):
        kwargs["revision"] = manifest["revision"]
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **kwargs)
    model_type = AutoConfig.from_pretrained(manifest["load_from"], **kwargs).model_type
    if not family_of(model_type).causal:
        return tokenizer, None, f"model type {model_type} is no decoder the workflow knows: no causal LM loss"
    model, info = load_pretrained("causal_lm", manifest["load_from"], output_loading_info=True,
                                  dtype=getattr(torch, dtype), **kwargs, **weights_options(manifest))
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        return tokenizer, None, (f"the checkpoint has no language-model head ({len(missing)} of its weights would be "
                                 "new), so no loss of its own")
    return tokenizer, model.eval(), ""


def icl_score_part(checkpoint_manifest: str | Path, token_table: str | Path, output: str | Path, *, model: str,
                   checkpoint: str, series: str, revision: str, step: int | None, max_length: int, contexts: int,
                   batch_size: int, prepend_bos: bool | None, resamples: int, bootstrap_seed: int, threads: int,
                   offline: bool, dtype: str = "float32") -> pd.DataFrame:
    """The (model, checkpoint) row of tables/icl_score.csv (rule icl_score_part); a model without a causal LM head
    or a text too short for two contexts gets a row with the reason in ``note`` and no numbers."""
    import torch

    from ..core.io import write_csv

    torch.set_num_threads(max(1, int(threads)))
    early, late = icl_positions(int(max_length))
    row: dict[str, Any] = {"model": model, "checkpoint": checkpoint, "series": series, "revision": revision,
                           "step": step, "max_length": int(max_length), "early_position": early,
                           "late_position": late, "contexts": contexts,
                           "prepend_bos": "tokenizer" if prepend_bos is None else str(prepend_bos).lower(),
                           "bootstrap_resamples": resamples, "bootstrap_seed": bootstrap_seed, "examples": 0,
                           "note": ""}
    tokenizer, network, why = load_causal_lm(checkpoint_manifest, offline=offline, dtype=dtype)
    if network is not None:
        input_ids = natural_contexts(token_table, tokenizer, late=late, contexts=contexts, prepend_bos=prepend_bos)
        if len(input_ids) >= 2:
            row.update(icl_score(network, input_ids, early=early, late=late, batch_size=batch_size,
                                 resamples=resamples, seed=bootstrap_seed))
            log.info("%d contexts of %d tokens: ICL score %.4f", len(input_ids), late + 1, row["icl_score"])
        else:
            why = (f"the natural text ({token_table}) holds {len(input_ids)} context(s) of {late + 1} tokens; the "
                   "score needs 2 or more (a longer surface corpus, or a lower max_length)")
    row["note"] = why
    frame = pd.DataFrame([row], columns=COLUMNS).astype({"step": "Int64"})
    write_csv(frame, output)
    return frame
