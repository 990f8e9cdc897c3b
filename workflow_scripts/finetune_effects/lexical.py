"""Lexical categories of the most-attended words [L] (METHODS 9, 10).

Per example (word level, METHODS 5: attention *to* a word sums its tokens' columns, *from* a word
averages its tokens' rows; :meth:`AttentionDump.iter_word_maps`):

1. per layer, the mean of the heads' maps (and, beyond [L], every head on its own);
2. special tokens removed: only units that are words are kept (special tokens, and the rare tokens
   over no word, lose their rows and columns), and every remaining row is renormalised to sum to 1
   over the words;
3. per attending word, the word it attends to most (itself included, as [L]'s argmax over all
   words; ``exclude_self`` leaves it out) and that word's category (content, function, other:
   a UPOS mapping);
4. ``argmax_share``: the share of attending words whose most-attended word is of the category;
   ``mass_share``: the mean (renormalised) attention mass each category receives.

A row with no attention left on words (everything on special tokens) still counts as an
attending word but gives no category; words cut by truncation have no unit and are skipped and
counted. Shares are ratios of per-example sums (words of the category / attending words), so
their 95% intervals resample examples; a fine-tuned checkpoint is compared with the pretrained
one on the same examples by a paired bootstrap test (:mod:`workflow_scripts.core.stats`): ``p`` is the
two-sided bootstrap p-value, never below 1/``bootstrap_resamples`` (a p at that floor means no resample
reached 0), and ``p_text`` prints it ("< 0.001" at the floor for 1000 resamples, else 2 digits).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import atomic_path, write_csv, write_json
from ..core.stats import format_p_value, paired_bootstrap_test, ratio_bootstrap_ci
from .patterns import checkpoint_info, first_examples, integer_columns

log = logging.getLogger(__name__)

CATEGORIES = ("content", "function", "other")
# What fine-tuning on each of [L]'s task groups should do to the share of each category.
EXPECTED_SIGN = {"syntactic": {"function": 1, "content": -1}, "semantic": {"content": 1, "function": -1}}
EPS = 1e-12


def category_of(upos: Sequence[str], mapping: Mapping[str, Sequence[str]]) -> np.ndarray:
    """Category index (0 content, 1 function, 2 other) of every UPOS tag.

    ``mapping``: the UPOS tags of the content and of the function words; every other tag is other.
    """
    lookup: dict[str, int] = {}
    for index, name in enumerate(("content", "function")):
        for tag in mapping.get(name, []):
            if tag in lookup:
                raise AtlasError(f"UPOS {tag!r} is in more than one category of the mapping {dict(mapping)}")
            lookup[tag] = index
    return np.array([lookup.get(str(tag), 2) for tag in upos], dtype=np.int64)


def category_counts(maps: np.ndarray, unit_word: np.ndarray, word_category: np.ndarray, *,
                    exclude_self: bool) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Counts of one example's word-level maps (..., U, U), vectorised over the leading axes.

    Returns (argmax counts (..., 3), summed renormalised mass (..., 3), attending words,
    rows with no mass left on words (...,)).
    """
    unit_word = np.asarray(unit_word)
    keep = np.flatnonzero(unit_word >= 0)
    m = np.asarray(maps, dtype=np.float64)[..., keep[:, None], keep[None, :]]  # (..., W, W)
    n_words = len(keep)
    lead = m.shape[:-2]
    if n_words == 0:
        zeros = np.zeros((*lead, len(CATEGORIES)))
        return zeros, zeros.copy(), 0, np.zeros(lead, dtype=np.int64)
    onehot = np.eye(len(CATEGORIES))[np.asarray(word_category)[unit_word[keep]]]  # (W, 3)
    total = m.sum(-1, keepdims=True)
    valid = total[..., 0] > EPS  # (..., W)
    normalised = m / np.maximum(total, EPS)
    mass = (normalised @ onehot).sum(-2)  # (..., 3)
    scores = normalised
    if exclude_self:
        scores = normalised.copy()
        diagonal = np.arange(n_words)
        scores[..., diagonal, diagonal] = -1.0
    best = scores.argmax(-1)  # (..., W)
    hits = onehot[best] * valid[..., None]  # (..., W, 3)
    if exclude_self and n_words == 1:
        hits = np.zeros_like(hits)
    return hits.sum(-2), mass, n_words, (~valid).sum(-1)


def lexical_counts(dump_dir: str | Path, token_table: str | Path, annotation: str | Path, output: str | Path, *,
                   mapping: Mapping[str, Sequence[str]], exclude_self: bool,
                   max_examples: int | None = None) -> dict[str, Any]:
    """Per-example category counts of every layer (mean of heads) and every head, as an .npz file."""
    from ..attention.reader import AttentionDump, to_word_level
    from ..attention.tokens import token_words

    dump = AttentionDump(dump_dir)
    words = token_words(token_table)
    try:
        table = pq.read_table(annotation, columns=["example_id", "upos", "annotator"])
    except Exception as exc:
        raise AtlasError(f"{annotation}: unreadable annotation table ({exc}); rerun snakemake") from exc
    upos = dict(zip(table["example_id"].to_pylist(), table["upos"].to_pylist()))
    annotators = sorted(set(table["annotator"].to_pylist()))
    wanted = set(first_examples(token_table, max_examples))
    ids, layer_argmax, layer_mass, head_argmax, head_mass, rows = [], [], [], [], [], []
    layer_empty, head_empty, skipped = 0, 0, 0
    for example in dump.iter_examples():
        if example.example_id not in wanted:
            continue
        tags = upos.get(example.example_id)
        if tags is None:
            raise AtlasError(f"example {example.example_id} of {dump_dir} has no row in the annotation {annotation}")
        if any(t is None for t in tags):
            raise AtlasError(f"example {example.example_id}: the annotation {annotation} lacks UPOS tags")
        word_maps = to_word_level(example, words[example.example_id], len(tags))
        category = category_of(tags, mapping)
        per_layer = word_maps.attention.mean(axis=1)  # (L, U, U): the mean of the heads' maps
        l_arg, l_mass, n_rows, l_empty = category_counts(per_layer, word_maps.unit_word, category,
                                                         exclude_self=exclude_self)
        h_arg, h_mass, _, h_empty = category_counts(word_maps.attention, word_maps.unit_word, category,
                                                    exclude_self=exclude_self)
        skipped += len(tags) - n_rows
        layer_empty += int(l_empty.sum())
        head_empty += int(h_empty.sum())
        ids.append(example.example_id)
        layer_argmax.append(l_arg)
        layer_mass.append(l_mass)
        head_argmax.append(h_arg)
        head_mass.append(h_mass)
        rows.append(n_rows)
    if len(ids) < len(wanted):
        raise AtlasError(f"the dump {dump_dir} holds {len(ids)} of the {len(wanted)} examples to analyse; rerun "
                         "snakemake to rebuild it")
    order = np.argsort(ids)
    arrays = {
        "example_id": np.asarray(ids, dtype=np.int64)[order],
        "rows": np.asarray(rows, dtype=np.int64)[order],
        "layer_argmax": np.stack(layer_argmax)[order], "layer_mass": np.stack(layer_mass)[order],
        "head_argmax": np.stack(head_argmax)[order], "head_mass": np.stack(head_mass)[order],
    }
    with atomic_path(output) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    summary = {"examples": len(ids), "attending_words": int(arrays["rows"].sum()),
               "words_without_units": int(skipped), "layer_rows_without_word_mass": layer_empty,
               "head_rows_without_word_mass": head_empty, "annotators": annotators,
               "exclude_self": exclude_self}
    write_json(summary, Path(output).with_suffix(".json"))
    log.info("lexical counts: %s", summary)
    return summary


def load_counts(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise AtlasError(f"{path}: unreadable lexical counts ({exc}); delete it and rerun snakemake") from exc


def share_rows(counts: Mapping[str, np.ndarray], level: str, *, resamples: int, seed: int) -> pd.DataFrame:
    """argmax_share and mass_share with 95% intervals per layer (level 'layer') or per head ('head')."""
    argmax = counts[f"{level}_argmax"]
    mass = counts[f"{level}_mass"]
    rows = counts["rows"].astype(np.float64)
    n_examples = argmax.shape[0]
    shape = argmax.shape[1:]  # (L, 3) or (L, H, 3)
    flat_arg = argmax.reshape(n_examples, -1)
    flat_mass = mass.reshape(n_examples, -1)
    share, low, high = ratio_bootstrap_ci(flat_arg, rows, resamples=resamples, seed=seed)
    mass_share, mass_low, mass_high = ratio_bootstrap_ci(flat_mass, rows, resamples=resamples, seed=seed)
    index = np.indices(shape).reshape(len(shape), -1)
    frame = {"layer": index[0]}
    if level == "head":
        frame["head"] = index[1]
    frame.update({"category": np.asarray(CATEGORIES)[index[-1]], "argmax_share": share, "mass_share": mass_share,
                  "n": int(rows.sum()), "ci_low": low, "ci_high": high, "mass_ci_low": mass_low,
                  "mass_ci_high": mass_high, "n_examples": n_examples})
    return pd.DataFrame(frame)


def task_groups(predictions: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """task -> 'syntactic' | 'semantic' from the tasks of each of [L]'s groups."""
    groups: dict[str, str] = {}
    for group, tasks in predictions.items():
        # Checked here too: a group without a predicted direction would silently predict nothing.
        if group not in EXPECTED_SIGN:
            raise AtlasError(f"unknown task group {group!r}; the groups are {', '.join(EXPECTED_SIGN)}")
        for task in tasks:
            groups[task] = group
    return groups


def change_rows(before: Mapping[str, np.ndarray], after: Mapping[str, np.ndarray], *, group: str | None,
                resamples: int, seed: int) -> pd.DataFrame:
    """Fine-tuned minus pretrained share per layer, category and measure, with a paired test over examples."""
    common, i, j = np.intersect1d(before["example_id"], after["example_id"], return_indices=True)
    if len(common) == 0:
        raise AtlasError("the pretrained and fine-tuned counts share no example")
    rows = before["rows"][i].astype(np.float64)
    if not np.array_equal(rows, after["rows"][j]):
        raise AtlasError("the pretrained and fine-tuned counts disagree on the words of the same examples; "
                         "their token tables differ: rerun snakemake")
    layers = before["layer_argmax"].shape[1]
    out = []
    for measure in ("argmax", "mass"):
        b, a = before[f"layer_{measure}"][i], after[f"layer_{measure}"][j]
        for layer in range(layers):
            for c, category in enumerate(CATEGORIES):
                diff, low, high, p = paired_bootstrap_test(b[:, layer, c], a[:, layer, c], rows,
                                                           resamples=resamples, seed=seed)
                sign = EXPECTED_SIGN.get(group or "", {}).get(category)
                out.append({
                    "layer": layer, "last_layer": layer == layers - 1, "category": category, "measure": measure,
                    "pretrained": b[:, layer, c].sum() / rows.sum(), "finetuned": a[:, layer, c].sum() / rows.sum(),
                    "difference": diff, "ci_low": low, "ci_high": high, "p": p,
                    "p_text": format_p_value(p, resamples), "n": int(rows.sum()),
                    "n_examples": len(common), "task_group": group or "none",
                    "predicted_direction": {1: "up", -1: "down"}.get(sign, "none"),
                    "moved_as_predicted": (np.sign(diff) == sign) if sign is not None and diff == diff else pd.NA,
                    "significant": bool(low > 0 or high < 0) if low == low else pd.NA,
                })
    return pd.DataFrame(out)


def top_layers(layers_table: pd.DataFrame, k: int) -> pd.DataFrame:
    """The k layers with the highest argmax share per (model, checkpoint, task, category)."""
    keys = ["model", "checkpoint", "task", "category"]
    ranked = layers_table.sort_values([*keys, "argmax_share", "layer"], ascending=[True] * 4 + [False, True],
                                      kind="stable")
    ranked["rank"] = ranked.groupby(keys).cumcount() + 1
    return ranked[ranked["rank"] <= k].reset_index(drop=True)


def lexical_tables(parts: Mapping[tuple[str, str, str], tuple[str | Path, str | Path]], *, layers_out: str | Path,
                   heads_out: str | Path, change_out: str | Path, last_layer_out: str | Path, top_out: str | Path,
                   predictions: Mapping[str, Sequence[str]], resamples: int, top_k: int,
                   pretrained_only: Sequence[str] = (), seed: int) -> dict[str, pd.DataFrame]:
    """All study tables of METHODS 9 from the per-(model, checkpoint, task) counts.

    ``parts``: (model, checkpoint, task) -> (counts .npz, checkpoint manifest).
    """
    groups = task_groups(predictions)
    layer_frames, head_frames, change_frames = [], [], []
    counts_of: dict[tuple[str, str, str], dict[str, np.ndarray]] = {}
    for (model, checkpoint, task), (path, manifest) in sorted(parts.items()):
        counts = load_counts(path)
        counts_of[(model, checkpoint, task)] = counts
        info = checkpoint_info(manifest)
        head = {"model": model, "checkpoint": checkpoint, "task": task, **info}
        note = "pretrained only: the study fine-tunes no model on this task" if task in pretrained_only else ""
        for level, frames in (("layer", layer_frames), ("head", head_frames)):
            frame = share_rows(counts, level, resamples=resamples, seed=seed)
            for key, value in reversed(list(head.items())):
                frame.insert(0, key, value)
            frame["note"] = note
            frame["bootstrap_seed"] = seed
            frames.append(frame)
    for (model, checkpoint, task), counts in counts_of.items():
        if checkpoint == "pretrained" or (model, "pretrained", task) not in counts_of:
            continue
        frame = change_rows(counts_of[(model, "pretrained", task)], counts, group=groups.get(task),
                            resamples=resamples, seed=seed)
        info = checkpoint_info(parts[(model, checkpoint, task)][1])
        for key, value in reversed(list({"model": model, "task": task, "checkpoint": checkpoint, **info}.items())):
            frame.insert(0, key, value)
        frame["bootstrap_seed"] = seed
        frame["bootstrap_resamples"] = resamples
        change_frames.append(frame)
    layers = integer_columns(pd.concat(layer_frames, ignore_index=True))
    heads = integer_columns(pd.concat(head_frames, ignore_index=True))
    change = pd.concat(change_frames, ignore_index=True) if change_frames else pd.DataFrame(
        columns=["model", "task", "checkpoint", "layer", "category", "measure", "difference"])
    last = change[change["last_layer"].astype(bool)].reset_index(drop=True) if len(change) else change
    top = top_layers(layers, top_k)
    write_csv(layers, layers_out)
    write_csv(heads, heads_out)
    write_csv(change, change_out)
    write_csv(last, last_layer_out)
    write_csv(top, top_out)
    return {"layers": layers, "heads": heads, "change": change, "last_layer": last, "top": top}
