"""Coreference heads on the coreference treebank's windows (gumwin by default; METHODS 7.4, [C] §4.3).

Input: dumps of the coreference treebank's windows (``syntax.coref_treebank``'s documents
cut into windows of consecutive sentences, corpus ``<treebank>win``: ``gumwin`` for GUM, the
default; see ``workflow_scripts.data.windows`` and rule ``coref_windows``) and the window
mention table. For every mention whose head word has an *antecedent* in the
window — the head word of an earlier mention of the same entity, "earlier"
meaning its head word comes before the mention's head word — every attention
head predicts the other word the mention's head word attends to most
(word level, special tokens excluded, as in 7.3); the prediction is correct
if it is the head word of any antecedent.

Baselines on the same mentions (they predict a word too):
- nearest mention: the head word of the nearest preceding mention (any entity;
  the preceding mention whose head word is closest before the mention's);
- head-word match: the nearest preceding mention whose head word has the same
  lowercased string, falling back to the nearest mention.

Mention type from the UPOS of the head word: pronoun (PRON), proper (PROPN),
nominal (everything else: NOUN, NUM, DET, ...).

Selection: only one split is dumped (``syntax.coref_split``, GUM dev by default), so
heads are selected and scored on the same documents (as [C] did) and, held out, on
halves of the documents (documents in order of appearance, alternately assigned to
halves a and b; select on one, score on the other).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..attention.reader import AttentionDump
from ..attention.tokens import token_words
from ..core.errors import AtlasError
from ..core.io import write_csv, write_table
from ..core.score_tables import list_rows, read_score_table
from ..core.stats import paired_bootstrap_test, ratio_bootstrap_ci
from .dependency import predicted_words

log = logging.getLogger(__name__)

MENTION_TYPES = ("all", "pronoun", "proper", "nominal")
BASELINES = ("nearest_mention", "head_word_match")


def mention_type(upos: str | None) -> str:
    if upos == "PRON":
        return "pronoun"
    if upos == "PROPN":
        return "proper"
    return "nominal"


@dataclass
class WindowMentions:
    """The scored mentions of one window and what each baseline predicts."""
    mention_ids: np.ndarray  # (M,)
    heads: np.ndarray  # (M,) head word of each scored mention
    antecedents: np.ndarray  # (M, n_words) bool: word w is the head word of an antecedent
    nearest: np.ndarray  # (M,) word predicted by the nearest-mention baseline
    head_match: np.ndarray  # (M,) word predicted by the head-word-match baseline
    types: list[str]


def window_mentions(mentions: pd.DataFrame, n_words: int) -> WindowMentions:
    """Mentions of one window that have an antecedent, their antecedent words and baseline predictions.

    ``mentions`` has columns mention_id, entity, head, head_form, head_upos (window word numbering).
    """
    heads = mentions["head"].to_numpy(np.int64)
    entities = mentions["entity"].astype(str).to_numpy()
    forms = mentions["head_form"].fillna("").str.lower().to_numpy()
    ids, scored_heads, rows, nearest, match, types = [], [], [], [], [], []
    for m in range(len(mentions)):
        before = heads < heads[m]
        same = before & (entities == entities[m])
        if not same.any():
            continue
        row = np.zeros(n_words, dtype=bool)
        row[heads[same]] = True
        preceding = np.flatnonzero(before)
        closest = preceding[heads[preceding] == heads[preceding].max()][0]
        matching = preceding[forms[preceding] == forms[m]]
        ids.append(int(mentions["mention_id"].iloc[m]))
        scored_heads.append(heads[m])
        rows.append(row)
        nearest.append(heads[closest])
        match.append(heads[matching].max() if len(matching) else heads[closest])
        types.append(mention_type(mentions["head_upos"].iloc[m]))
    return WindowMentions(np.asarray(ids, np.int64), np.asarray(scored_heads, np.int64),
                          np.asarray(rows, dtype=bool).reshape(len(ids), n_words),
                          np.asarray(nearest, np.int64), np.asarray(match, np.int64), types)


def score_window(maps: np.ndarray, unit_word: np.ndarray, found: WindowMentions) -> tuple[np.ndarray, np.ndarray]:
    """(correct (M, L*H) of every head, usable (M,)) for the mentions of one window.

    A mention is usable when its head word and at least one antecedent head word
    have units (words cut by truncation have none).
    """
    layers, n_heads = maps.shape[:2]
    words, pred = predicted_words(maps, unit_word)
    pred = pred.reshape(layers * n_heads, -1)
    n_words = found.antecedents.shape[1]
    unit_of_word = np.full(n_words, -1, dtype=np.int64)
    unit_of_word[words] = np.arange(len(words))
    has_unit = unit_of_word >= 0
    antecedents = found.antecedents & has_unit[None, :]
    usable = has_unit[found.heads] & antecedents.any(axis=1)
    if len(found.heads) == 0:
        return np.zeros((0, layers * n_heads), dtype=bool), usable
    predicted = pred[:, np.maximum(unit_of_word[found.heads], 0)].T  # (M, LH) word index, -1 none
    safe = np.where(predicted >= 0, predicted, 0)
    correct = np.take_along_axis(antecedents, safe, axis=1) & (predicted >= 0)
    return correct & usable[:, None], usable


def score_coreference_heads(dump_dir: str | Path, token_table: str | Path, annotation: str | Path,
                            mentions_path: str | Path, output: str | Path) -> dict[str, Any]:
    """Stream a dump of the coreference treebank's windows (gumwin by default); write one row per scored mention
    with every head's correctness."""
    start = time.perf_counter()
    dump = AttentionDump(dump_dir)
    annotation_table = pq.read_table(annotation, columns=["example_id", "words"])
    n_words = {int(e): len(w) for e, w in zip(annotation_table["example_id"].to_pylist(),
                                              annotation_table["words"].to_pylist())}
    mentions = pq.read_table(mentions_path).to_pandas()
    missing = {"mention_id", "example_id", "doc_id", "entity", "head", "head_form", "head_upos"} - set(mentions)
    if missing:
        raise AtlasError(f"{mentions_path}: missing columns {sorted(missing)}; rebuild the coreference windows")
    by_window = {int(k): g.sort_values("head", kind="stable") for k, g in mentions.groupby("example_id")}
    doc_of_window = mentions.groupby("example_id")["doc_id"].first().to_dict()
    words_of_tokens = token_words(token_table)
    lh = dump.num_layers * dump.num_heads
    records: dict[str, list] = {k: [] for k in ("mention_id", "example_id", "doc_id", "mention_type", "correct",
                                                "nearest_mention", "head_word_match")}
    # The mention table holds every window; a dump limited by attention.max_examples only the first ones: the
    # mentions counted are those of the windows read.
    skipped = with_antecedent = read_mentions = 0
    for example in dump.iter_word_maps(words_of_tokens, n_words):
        group = by_window.get(example.example_id)
        if group is None:
            continue
        read_mentions += len(group)
        found = window_mentions(group, n_words[example.example_id])
        with_antecedent += len(found.heads)
        correct, usable = score_window(example.attention, example.unit_word, found)
        skipped += int((~usable).sum())
        keep = np.flatnonzero(usable)
        records["mention_id"] += found.mention_ids[keep].tolist()
        records["example_id"] += [example.example_id] * len(keep)
        records["doc_id"] += [doc_of_window[example.example_id]] * len(keep)
        records["mention_type"] += [found.types[i] for i in keep]
        records["correct"].append(correct[keep])
        rows = np.arange(len(found.heads))[keep]
        records["nearest_mention"] += found.antecedents[rows, found.nearest[keep]].tolist()
        records["head_word_match"] += found.antecedents[rows, found.head_match[keep]].tolist()
    correct = np.concatenate(records.pop("correct")) if records["mention_id"] else np.zeros((0, lh), bool)
    order = np.lexsort((np.asarray(records["mention_id"]), np.asarray(records["example_id"])))
    table = pa.table({
        **{k: pa.array(np.asarray(v)[order] if len(v) else v) for k, v in records.items()},
        "correct": pa.FixedSizeListArray.from_arrays(pa.array(correct[order].reshape(-1).astype(np.uint8)), lh),
    })
    stats = {"num_layers": dump.num_layers, "num_heads": dump.num_heads, "windows": len(dump),
             "mentions": read_mentions, "mentions_with_antecedent": with_antecedent,
             "mentions_scored": len(order), "mentions_skipped_no_unit": skipped, "dump": str(dump_dir),
             "input_protocol": dump.manifest.get("input_protocol", "text"),
             "seconds": round(time.perf_counter() - start, 2)}
    log.info("coreference scoring of %s: %s", dump_dir, stats)
    if skipped:
        log.warning("%d mentions skipped: their head word or every antecedent lost its tokens (truncation)",
                    skipped)
    write_table(table, output, stats)
    return stats


# ---------------------------------------------------------------------------------------------
# Tables


def document_halves(doc_ids: Sequence[str]) -> dict[str, str]:
    """Documents in order of first appearance, alternately in half a and half b."""
    return {doc: "ab"[i % 2] for i, doc in enumerate(dict.fromkeys(doc_ids))}


@dataclass
class CorefScores:
    meta: dict[str, Any]
    frame: pd.DataFrame  # mention_id, example_id, doc_id, mention_type, nearest_mention, head_word_match, half
    correct: np.ndarray  # (mentions, L*H)

    @classmethod
    def read(cls, path: str | Path) -> CorefScores:
        table, meta = read_score_table(path, "a coreference score table")
        correct = list_rows(table["correct"])
        frame = table.drop(["correct"]).to_pandas()
        halves = document_halves(frame["doc_id"].tolist())
        frame["half"] = frame["doc_id"].map(halves)
        return cls(meta, frame, correct.astype(np.float64))

    @property
    def input_protocol(self) -> str:
        return str(self.meta.get("input_protocol", "text"))

    def per_window(self, values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-window sums of ``values`` over the mentions in ``mask``, and per-window mention counts."""
        windows = self.frame["example_id"].to_numpy()[mask]
        unique, inverse = np.unique(windows, return_inverse=True)
        sums = np.zeros((len(unique),) + values.shape[1:])
        np.add.at(sums, inverse, values[mask])
        return sums, np.bincount(inverse, minlength=len(unique)).astype(np.float64)

    def mask(self, mention_type: str, half: str | None = None) -> np.ndarray:
        keep = np.ones(len(self.frame), dtype=bool)
        if mention_type != "all":
            keep &= self.frame["mention_type"].to_numpy() == mention_type
        if half is not None:
            keep &= self.frame["half"].to_numpy() == half
        return keep


PROTOCOLS = (("all", "all"), ("a", "b"), ("b", "a"))  # (select documents, score documents)


def _half(name: str) -> str | None:
    return None if name == "all" else name


def coref_head_rows(model: str, checkpoint: str, scores: CorefScores, *, resamples: int, seed: int) -> pd.DataFrame:
    layers, n_heads = int(scores.meta["num_layers"]), int(scores.meta["num_heads"])
    frames = []
    for kind in MENTION_TYPES:
        sums, counts = scores.per_window(scores.correct, scores.mask(kind))
        estimate, low, high = ratio_bootstrap_ci(sums, counts, resamples=resamples, seed=seed)
        halves = {}
        for half in "ab":
            s, c = scores.per_window(scores.correct, scores.mask(kind, half))
            halves[half] = s.sum(axis=0) / c.sum() if c.sum() else np.full(layers * n_heads, np.nan)
        frames.append(pd.DataFrame({
            "model": model, "checkpoint": checkpoint, "input_protocol": scores.input_protocol,
            "mention_type": kind, "layer": np.repeat(np.arange(layers), n_heads),
            "head": np.tile(np.arange(n_heads), layers),
            "accuracy": estimate, "n": int(counts.sum()), "ci_low": low, "ci_high": high,
            "accuracy_half_a": halves["a"], "accuracy_half_b": halves["b"],
        }))
    return pd.concat(frames, ignore_index=True)


def coref_best_rows(model: str, checkpoint: str, scores: CorefScores, *, resamples: int, seed: int,
                    control: CorefScores | None = None, control_name: str | None = None) -> list[dict]:
    """Best head (selected on all mentions of the selection documents) and both baselines, by mention type."""
    n_heads = int(scores.meta["num_heads"])
    kwargs = {"resamples": resamples, "seed": seed}
    rows = []

    def best_head(source: CorefScores, select: str) -> int:
        sums, counts = source.per_window(source.correct, source.mask("all", _half(select)))
        return int(np.argmax(sums.sum(axis=0) / max(counts.sum(), 1)))

    for select, score in PROTOCOLS:
        index = best_head(scores, select)
        control_index = best_head(control, select) if control is not None else None
        for kind in MENTION_TYPES:
            mask = scores.mask(kind, _half(score))
            if not mask.any():
                continue
            head_sums, counts = scores.per_window(scores.correct[:, index], mask)
            methods = {"head": head_sums}
            for baseline in BASELINES:
                methods[baseline], _ = scores.per_window(scores.frame[baseline].to_numpy(np.float64), mask)
            for method, sums in methods.items():
                estimate, low, high = ratio_bootstrap_ci(sums, counts, **kwargs)
                row = {"model": model, "checkpoint": checkpoint, "input_protocol": scores.input_protocol,
                       "select_documents": select,
                       "score_documents": score, "method": method, "mention_type": kind,
                       "layer": index // n_heads if method == "head" else None,
                       "head": index % n_heads if method == "head" else None,
                       "head_label": f"{index // n_heads + 1}-{index % n_heads + 1}" if method == "head" else "",
                       "accuracy": float(estimate), "n": int(counts.sum()), "ci_low": float(low),
                       "ci_high": float(high)}
                if method == "head":
                    diff, _, _, p = paired_bootstrap_test(methods["head_word_match"], head_sums, counts, **kwargs)
                    row.update({"diff_vs_head_word_match": diff, "p_vs_head_word_match": p})
                    if control is not None:
                        control_mask = control.mask(kind, _half(score))
                        if not np.array_equal(control.frame["mention_id"].to_numpy()[control_mask],
                                              scores.frame["mention_id"].to_numpy()[mask]):
                            raise AtlasError("coreference scores of the two checkpoints cover different mentions; "
                                             "rerun snakemake")
                        c_sums, _ = control.per_window(control.correct[:, control_index], control_mask)
                        estimate_c = c_sums.sum() / counts.sum()
                        diff, _, _, p = paired_bootstrap_test(c_sums, head_sums, counts, **kwargs)
                        row.update({"control_checkpoint": control_name,
                                    "control_head_label":
                                        f"{control_index // n_heads + 1}-{control_index % n_heads + 1}",
                                    "control_accuracy": float(estimate_c), "diff_vs_control": diff, "p_vs_control": p})
                rows.append(row)
    return rows


def summarise_coreference(parts: Mapping[tuple[str, str], str | Path], heads_output: str | Path,
                          best_output: str | Path, *, resamples: int, seed: int,
                          control_checkpoint: str = "random") -> None:
    """coref_heads.csv and coref_best.csv from the score parts of every (model, checkpoint) on the coreference
    treebank's windows (gumwin by default), each paired with the random-init control of its model."""
    scores = {key: CorefScores.read(path) for key, path in parts.items()}
    heads, best = [], []
    for (model, checkpoint), score in sorted(scores.items()):
        heads.append(coref_head_rows(model, checkpoint, score, resamples=resamples, seed=seed))
        control = scores.get((model, control_checkpoint)) if checkpoint != control_checkpoint else None
        best += coref_best_rows(model, checkpoint, score, resamples=resamples, seed=seed, control=control,
                                control_name=control_checkpoint if control is not None else None)
    write_csv(pd.concat(heads, ignore_index=True) if heads else pd.DataFrame(), heads_output)
    write_csv(pd.DataFrame(best), best_output)
