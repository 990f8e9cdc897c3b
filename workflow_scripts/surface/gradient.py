"""Gradient importance of separator attention (METHODS 7.2, [C] §3.2 and Fig. 3).

For every layer: the mean magnitude |dL/dA| of the gradient of the model's own loss L with
respect to the attention weights A (the softmax probabilities every head returns with
``output_attentions=True``, eager attention), split into the weights on separator tokens and
the weights on every other token.

The loss, per checkpoint:

- **masked LM** when ``AutoModelForMaskedLM`` loads the checkpoint with no newly initialised
  weight (a real MLM head). Inputs: the token table's examples (the wiki segments, as in
  7.1), at most ``max_examples`` of them (a random subset fixed by ``seed``). Masking as in
  BERT: round(mask_prob x non-special tokens) positions (at least 1) chosen with a generator
  seeded by (seed, example_id); of them 80% become the mask token, 10% a random token, 10% stay.
- **task loss** for a fine-tuned checkpoint (manifest kind ``finetuned``):
  ``AutoModelForSequenceClassification`` on that task's dev examples (labels from the task's
  data table; STS-B is regression), at most ``max_examples`` of them.
- otherwise the checkpoint is **skipped**: one row per layer with empty gradient columns and
  the reason in ``skipped`` (e.g. a sentence encoder saved without its MLM head, or the
  random-init control, which has none).

Each example is a forward and backward pass of its own (no padding). Separators are the
special tokens other than the first (restricted to the tokenizer's ``sep_token_id`` when it
has one), as in 7.1. The mean over (heads, rows, columns) entries of a layer is a ratio of
per-example sums, so its 95% interval resamples examples (METHODS 10).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import write_csv
from ..core.precision import autocast
from ..core.stats import ratio_bootstrap_ci
from ..data.entries import TaskSpec
from ..models.checkpoints import read_manifest, weights_options
from ..models.families import ensure_pad_token, family_of, load_pretrained

log = logging.getLogger(__name__)

COLUMNS = ["model", "checkpoint", "layer", "grad_to_sep", "grad_to_other", "n", "grad_to_sep_low",
           "grad_to_sep_high", "grad_to_other_low", "grad_to_other_high", "sep_to_other_ratio", "loss",
           "mean_loss", "data", "mask_prob", "seed", "skipped"]


class Skip(Exception):
    """The checkpoint has no usable loss; the message says why."""


def separator_mask(special: np.ndarray, input_ids: np.ndarray, sep_token_id: int | None) -> np.ndarray:
    """Separators of one example: special tokens but the first (with the sep id, when known)."""
    special = np.asarray(special, dtype=bool)
    sep = special.copy()
    first = np.flatnonzero(special)
    if len(first):
        sep[first[0]] = False
    if sep_token_id is not None:
        sep &= np.asarray(input_ids) == sep_token_id
    return sep


def bert_masking(input_ids: np.ndarray, special: np.ndarray, rng: np.random.Generator, *, mask_prob: float,
                 mask_token_id: int, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(masked input ids, labels with -100 where nothing is predicted), BERT's 80/10/10 rule."""
    input_ids = np.asarray(input_ids, dtype=np.int64)
    candidates = np.flatnonzero(~np.asarray(special, dtype=bool))
    labels = np.full(len(input_ids), -100, dtype=np.int64)
    if len(candidates) == 0:
        return input_ids.copy(), labels
    count = min(len(candidates), max(1, int(round(mask_prob * len(candidates)))))
    chosen = np.sort(rng.choice(candidates, size=count, replace=False))
    labels[chosen] = input_ids[chosen]
    masked = input_ids.copy()
    draw = rng.random(count)
    masked[chosen[draw < 0.8]] = mask_token_id
    randomised = chosen[(draw >= 0.8) & (draw < 0.9)]
    masked[randomised] = rng.integers(0, vocab_size, size=len(randomised))
    return masked, labels


def attention_gradients(model: Any, inputs: dict[str, Any], precision: str = "fp32") -> tuple[list[Any], float]:
    """dL/dA for every layer's attention weights A (each (batch, heads, T, T)), and the loss L.

    ``inputs`` hold the labels, so that the model returns its loss. The weights are those the
    model returns with ``output_attentions=True`` (eager attention): in eval mode they are the
    very tensors multiplied with the values, so their ``.grad`` is the gradient sought.
    """
    import torch

    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        with autocast(precision, "cpu"):
            outputs = model(**inputs, output_attentions=True)
        attentions = getattr(outputs, "attentions", None)
        if not attentions or any(a is None for a in attentions):
            raise AtlasError(f"model type {model.config.model_type!r} returned no attention weights; load it with "
                             "attn_implementation='eager'")
        if outputs.loss is None:
            raise AtlasError("the model returned no loss; the inputs must hold labels")
        if not all(a.requires_grad for a in attentions):
            raise AtlasError("the attention weights are not part of the autograd graph; they cannot be "
                             "differentiated (is the model frozen or run under inference_mode?)")
        for attention in attentions:
            attention.retain_grad()
        outputs.loss.backward()
    gradients = []
    for layer, attention in enumerate(attentions):
        if attention.grad is None:
            raise AtlasError(f"layer {layer}: no gradient reached the attention weights; the returned weights "
                             "are not the ones the model used (eager attention is required)")
        gradients.append(attention.grad.detach())
    return gradients, float(outputs.loss.detach())


def gradient_sums(gradients: list[Any], sep: np.ndarray) -> np.ndarray:
    """Per-layer sums of |dL/dA| of one example over separator and over other columns.

    Returns (layers, 4): [sum to separators, entries to separators, sum to others, entries to
    others]; entries count (heads x rows x columns). Every head of a layer at once.
    """
    import torch

    sep_t = torch.as_tensor(np.asarray(sep, dtype=bool))
    n_sep, n_other = int(sep_t.sum()), int((~sep_t).sum())
    sums = np.zeros((len(gradients), 4), dtype=np.float64)
    for layer, gradient in enumerate(gradients):
        magnitude = gradient[0].abs()  # (heads, T, T)
        if magnitude.shape[-1] != len(sep_t):
            raise AtlasError(f"layer {layer}: gradient over {magnitude.shape[-1]} tokens, separator mask over "
                             f"{len(sep_t)}")
        heads, rows = magnitude.shape[0], magnitude.shape[1]
        received = magnitude.sum(dim=(0, 1))  # (T,): summed over heads and rows
        sums[layer] = [float(received[sep_t].sum()), heads * rows * n_sep,
                       float(received[~sep_t].sum()), heads * rows * n_other]
    return sums


def load_mlm(load_from: str, offline: bool, **weights: Any) -> Any:
    """The checkpoint with its masked-LM head; Skip if the head (or any weight) would be new.

    ``weights``: how its weights are read (models.checkpoints.weights_options)."""
    import torch

    try:
        model, info = load_pretrained("masked_lm", load_from, attn_implementation="eager", output_loading_info=True,
                                      local_files_only=offline, dtype=torch.float32, **weights)
    except (ValueError, KeyError) as exc:  # no masked-LM class for this model type
        raise Skip(f"transformers has no masked-LM model class for this checkpoint ({type(exc).__name__})") from exc
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        # Named in the debug log only: the warning is read in every run of a model saved without its head.
        log.debug("weights a masked-LM head would newly initialise: %s", ", ".join(missing))
        raise Skip(f"no masked-LM head ({len(missing)} of its weights are not in the checkpoint), so the model has "
                   "no masked-LM loss of its own")
    return model


def load_classifier(load_from: str, offline: bool, **weights: Any) -> Any:
    import torch

    model, info = load_pretrained("classifier", load_from, attn_implementation="eager", output_loading_info=True,
                                  local_files_only=offline, dtype=torch.float32, **weights)
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        raise Skip(f"the fine-tuned checkpoint has no trained classification head (missing {missing[:4]})")
    return model


def mlm_examples(token_table: str | Path, tokenizer: Any, *, max_examples: int | None, mask_prob: float,
                 seed: int):
    """Yield (inputs of one example, separator mask) for the masked-LM loss."""
    import pyarrow.parquet as pq
    import torch

    if tokenizer.mask_token_id is None:
        raise Skip("the tokenizer has no mask token")
    table = pq.read_table(token_table, columns=["example_id", "input_id", "token_type_id", "special"])
    example = table["example_id"].to_numpy()
    if len(example) == 0:
        raise AtlasError(f"{token_table}: the token table is empty")
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(example)) + 1, [len(example)]])
    starts = bounds[:-1]
    chosen = np.arange(len(starts))
    if max_examples is not None and max_examples < len(starts):
        chosen = np.sort(np.random.default_rng(seed).permutation(len(starts))[:max_examples])
    ids, types = table["input_id"].to_numpy(), table["token_type_id"].to_numpy()
    special = table["special"].to_numpy(zero_copy_only=False)
    with_types = "token_type_ids" in tokenizer.model_input_names
    for i in chosen:
        start, end = bounds[i], bounds[i + 1]
        example_id = int(example[start])
        rng = np.random.default_rng([seed, example_id])
        masked, labels = bert_masking(ids[start:end], special[start:end], rng, mask_prob=mask_prob,
                                      mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer))
        inputs = {"input_ids": torch.from_numpy(masked)[None], "labels": torch.from_numpy(labels)[None],
                  "attention_mask": torch.ones((1, end - start), dtype=torch.long)}
        if with_types:
            inputs["token_type_ids"] = torch.from_numpy(types[start:end].astype(np.int64))[None]
        yield inputs, separator_mask(special[start:end], ids[start:end], tokenizer.sep_token_id)


def task_examples(manifest: dict[str, Any], task_data: str | Path, tokenizer: Any, model: Any, *,
                  spec: TaskSpec, max_examples: int | None, seed: int):
    """Yield (inputs of one dev example with its label, separator mask) for the task loss."""
    import torch

    from ..finetune.task_data import TaskData, load_split

    frame = load_split(task_data, spec, spec.dev_split)
    if max_examples is not None and max_examples < len(frame):
        keep = np.sort(np.random.default_rng(seed).permutation(len(frame))[:max_examples])
        frame = frame.iloc[keep].reset_index(drop=True)
    settings = dict(manifest.get("finetune") or {})
    # A manifest written without its fine-tuning settings: the model's own limit (WiC then needs them).
    settings.setdefault("max_length", min(512, getattr(model.config, "max_position_embeddings", 512)))
    data = TaskData(frame, spec, tokenizer, settings, task_data)
    regression = spec.is_regression
    for i in range(len(data)):
        batch = data.batch([i], "cpu")
        if regression:
            batch["labels"] = batch["labels"].to(torch.float32)
        ids = data.input_ids[i]
        special = np.asarray(tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True), dtype=bool)
        yield batch, separator_mask(special, np.asarray(ids), tokenizer.sep_token_id)


def sep_gradient(checkpoint_manifest: str | Path, token_table: str | Path, output: str | Path, *,
                 max_examples: int | None, task_data: str | Path | None = None,
                 task: dict[str, Any] | None = None, mask_prob: float, seed: int, precision: str = "fp32",
                 resamples: int, bootstrap_seed: int, threads: int, offline: bool,
                 data_name: str = "") -> pd.DataFrame:
    """The per-checkpoint part of ``sep_gradient.csv``: one row per layer."""
    import torch
    from transformers import AutoConfig, AutoTokenizer

    torch.set_num_threads(max(1, int(threads)))
    manifest = read_manifest(checkpoint_manifest)
    load_from = manifest["load_from"]
    revision = manifest.get("revision")  # a hub model's pinned revision: without it the hub's main would be loaded
    config = AutoConfig.from_pretrained(load_from, revision=revision, local_files_only=offline)
    num_layers = int(config.num_hidden_layers)
    base = {"model": manifest["model"], "checkpoint": manifest["checkpoint"], "mask_prob": np.nan, "seed": seed}
    loss_name, data, mean_loss, skipped = "", data_name, np.nan, ""
    per_example: list[np.ndarray] = []
    try:
        tokenizer = AutoTokenizer.from_pretrained(load_from, revision=revision, local_files_only=offline)
        if manifest.get("kind") == "finetuned":
            if task_data is None:
                raise AtlasError(f"{checkpoint_manifest}: fine-tuned checkpoint of task {manifest.get('task')!r} "
                                 "but no dev data table was given")
            loss_name, data = f"task:{manifest['task']}", str(task_data)
            model = load_classifier(load_from, offline, **weights_options(manifest), revision=revision)
            ensure_pad_token(model, tokenizer)
            if task is None:
                raise AtlasError(f"{checkpoint_manifest}: a fine-tuned checkpoint's gradient needs its task's entry")
            examples = task_examples(manifest, task_data, tokenizer, model, spec=TaskSpec.from_params(task),
                                     max_examples=max_examples, seed=seed)
        else:
            loss_name, base["mask_prob"] = "mlm", mask_prob
            if family_of(config.model_type).causal:
                raise Skip(f"a decoder ({config.model_type}) has no masked-LM loss; the separator gradient ([C] 7.2) "
                           "needs one")
            model = load_mlm(load_from, offline, **weights_options(manifest), revision=revision)
            examples = mlm_examples(token_table, tokenizer, max_examples=max_examples, mask_prob=mask_prob,
                                    seed=seed)
        model.eval()  # no dropout: the weights returned are the ones used
        losses = []
        for inputs, sep in examples:
            gradients, loss = attention_gradients(model, inputs, precision)
            per_example.append(gradient_sums(gradients, sep))
            losses.append(loss)
        if not per_example:
            raise AtlasError(f"no example to compute the {loss_name} loss on ({data})")
        mean_loss = float(np.mean(losses))
    except Skip as reason:
        skipped = str(reason)
        log.warning("%s/%s: gradient analysis skipped: %s", manifest["model"], manifest["checkpoint"], skipped)
    rows = []
    if per_example:
        sums = np.stack(per_example)  # (examples, layers, 4)
        to_sep = ratio_bootstrap_ci(sums[..., 0], sums[..., 1], resamples=resamples, seed=bootstrap_seed)
        to_other = ratio_bootstrap_ci(sums[..., 2], sums[..., 3], resamples=resamples, seed=bootstrap_seed)
        for layer in range(sums.shape[1]):
            sep_value, other_value = float(to_sep[0][layer]), float(to_other[0][layer])
            rows.append({**base, "layer": layer, "grad_to_sep": sep_value, "grad_to_other": other_value,
                         "n": len(sums), "grad_to_sep_low": float(to_sep[1][layer]),
                         "grad_to_sep_high": float(to_sep[2][layer]),
                         "grad_to_other_low": float(to_other[1][layer]),
                         "grad_to_other_high": float(to_other[2][layer]),
                         "sep_to_other_ratio": sep_value / other_value if other_value > 0 else np.nan,
                         "loss": loss_name, "mean_loss": mean_loss, "data": data, "skipped": ""})
        log.info("%s/%s: %s loss %.4f over %d examples; grad to sep by layer %s, to others %s", manifest["model"],
                 manifest["checkpoint"], loss_name, mean_loss, len(sums), np.round(to_sep[0], 8).tolist(),
                 np.round(to_other[0], 8).tolist())
    else:
        for layer in range(num_layers):
            rows.append({**base, "layer": layer, "grad_to_sep": np.nan, "grad_to_other": np.nan, "n": 0,
                         "loss": loss_name, "data": data, "skipped": skipped})
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS)
    write_csv(frame, output)
    return frame
