"""Do the heads the syntax stage found matter? Ablating them against a random head of the same layer.

For the pretrained model's best head of each dependency relation (``dependency_best.csv``) and its best
coreference head (``coref_best.csv``), and for a random other head of the same layer each (seeded), two
changes are measured per ablation mode (docs/ablation.md):

(a) the change in each fine-tuned task's dev metric when the head is disabled in the task's final
    checkpoint (the first ``max_examples`` dev examples, as :mod:`.disabling` scores them);
(b) the change in the attention-only probe's UAS (``attn``, METHODS 7.5) when the head is disabled in the
    pretrained model: the probe is trained once, on the unablated training features the syntax stage
    cached, and scored on score-split features recomputed by forward passes with the head disabled, built
    exactly as ``probe_features`` builds them (an unablated pass reproduces the probe's own UAS).

The score-split features are computed one ablation (variant) at a time, over the whole split in length-sorted
batches of ``batch_size`` (:class:`AblatedFeatures`), and scored by the trained probe before the next variant:
a few hundred batched forward passes per variant, and memory of one variant's features (the float16 feature
cache of the split) however many heads and modes are ablated.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..attention.annotate import read_trees
from ..attention.extract import read_examples
from ..attention.reader import ExampleMaps, to_word_level
from ..attention.signals import forward_attentions
from ..attention.tokens import token_words
from ..core.errors import AtlasError, InputFormatError
from ..core.io import read_csv, write_csv
from ..core.labels import CAUSAL_UNION, DEP_TO_HEAD, EITHER, HEAD_TO_DEP, head_label
from ..core.table_names import COREF_BEST, DEPENDENCY_BEST
from ..finetune.task_data import collate
from ..models.families import family_of
from ..probing.features import (
    GloveLookup,
    ProbeFeatures,
    extended_units,
    first_special_tokens,
    probe_sentences,
    sentence_features,
    word_has_unit,
)
from ..probing.model import FeatureSource, evaluate, fit_probe, sentence_batches
from .disabling import TaskScorer, check_modes
from .heads import HeadAblation, load_ablatable
from .tables import FOUND_HEADS_COLUMNS

log = logging.getLogger(__name__)

COREFERENCE = "coreference"
PROBE_TARGET = "probe:attn UAS"
PRETRAINED = "pretrained"
# The best head of a relation: the one looking either way ([C]'s Table 1); 'all' has only dependent -> head.
DIRECTION_PREFERENCE = (EITHER, DEP_TO_HEAD, HEAD_TO_DEP, CAUSAL_UNION)
DEPENDENCY_COLUMNS = ["model", "checkpoint", "treebank", "relation", "direction", "select_split", "score_split",
                      "layer", "head"]
COREF_COLUMNS = ["model", "checkpoint", "select_documents", "method", "mention_type", "layer", "head"]
PROGRESS_EVERY_S = 30.0


@dataclasses.dataclass(frozen=True)
class FoundHead:
    source: str  # relation name, or COREFERENCE
    layer: int  # 0-based
    head: int
    random_head: int  # another head of the same layer


def _table(path: str | Path, columns: Sequence[str], fix: str) -> pd.DataFrame:
    frame = read_csv(path)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputFormatError(path, None, f"columns {missing} are missing (the found-heads check needs "
                                           f"{list(columns)})", fix)
    return frame


def _head_of(row: pd.Series, path: str | Path, what: str) -> tuple[int, int]:
    layer, head = pd.to_numeric(pd.Series([row["layer"], row["head"]]), errors="coerce")
    if not (np.isfinite(layer) and np.isfinite(head)):
        raise InputFormatError(path, None, f"{what}: layer {row['layer']!r}, head {row['head']!r} are not numbers",
                               "rerun the syntax stage to rebuild the table")
    return int(layer), int(head)


def read_found_heads(dependency_best: str | Path, coref_best: str | Path | None, *, model: str, treebank: str,
                     relations: Sequence[str], select_split: str, score_split: str) -> list[tuple[str, int, int]]:
    """(source, layer, head) of the pretrained model's best head per relation (in ``relations`` order, on
    ``treebank``, selected on ``select_split`` and scored on ``score_split``), then its best coreference head
    (selected on all documents, all mentions) where ``coref_best`` is given. Layers and heads are 0-based."""
    fix = f"rebuild it with the syntax stage (snakemake ... tables/{DEPENDENCY_BEST}.csv)"
    frame = _table(dependency_best, DEPENDENCY_COLUMNS, fix)
    text = frame[DEPENDENCY_COLUMNS[:-2]].astype(str)
    rows = frame[(text["model"] == model) & (text["checkpoint"] == PRETRAINED) & (text["treebank"] == treebank)
                 & (text["select_split"] == select_split) & (text["score_split"] == score_split)]
    if rows.empty:
        raise AtlasError(f"{dependency_best}: no row of model {model!r}, checkpoint 'pretrained', treebank "
                         f"{treebank!r}, selected on {select_split!r} and scored on {score_split!r}; run the syntax "
                         "stage for this model on that treebank (syntax.treebanks) before the found-heads check")
    found = []
    for relation in relations:
        part = rows[rows["relation"].astype(str) == relation]
        chosen = next((part[part["direction"].astype(str) == d] for d in DIRECTION_PREFERENCE
                       if (part["direction"].astype(str) == d).any()), None)
        if chosen is None:
            log.warning("relation %r has no row in %s (no arc in the split?); it is left out", relation,
                        dependency_best)
            continue
        found.append((relation, *_head_of(chosen.iloc[0], dependency_best, f"relation {relation!r}")))
    if coref_best is not None:
        coref = _table(coref_best, COREF_COLUMNS, "rebuild it with the syntax stage (snakemake ... "
                                                  f"tables/{COREF_BEST}.csv)")
        text = coref[COREF_COLUMNS[:-2]].astype(str)
        rows = coref[(text["model"] == model) & (text["checkpoint"] == PRETRAINED) & (text["method"] == "head")
                     & (text["mention_type"] == "all") & (text["select_documents"] == "all")]
        if rows.empty:
            raise AtlasError(f"{coref_best}: no best-head row of model {model!r}, checkpoint 'pretrained' (method "
                             "'head', mention_type 'all', select_documents 'all'); run the coreference analysis "
                             "for this model, or leave coref_best out")
        found.append((COREFERENCE, *_head_of(rows.iloc[0], coref_best, "the coreference head")))
    return found


def random_same_layer_head(layer: int, head: int, num_heads: int, seed: int) -> int:
    """A random head of ``layer`` other than ``head``, fixed by (seed, layer, head): the same found head gets
    the same random partner whichever other heads are found."""
    if num_heads < 2:
        raise AtlasError("the model has one head per layer: there is no other head of the same layer to compare a "
                         "found head with; turn ablation.found_heads off for it")
    others = [h for h in range(num_heads) if h != head]
    rng = np.random.default_rng([int(seed) % 2**32, int(layer), int(head)])  # seed sequences take no negatives
    return others[int(rng.integers(len(others)))]


def pair_found_heads(found: Sequence[tuple[str, int, int]], num_layers: int, num_heads: int, seed: int,
                     source: str | Path) -> list[FoundHead]:
    """Each found head with its random same-layer partner; AtlasError (naming ``source``) for a head out of range."""
    paired = []
    for name, layer, head in found:
        if not (0 <= layer < num_layers and 0 <= head < num_heads):
            raise AtlasError(f"{source}: the {name!r} head (layer {layer}, head {head}, 0-based) is not a head of "
                             f"this model ({num_layers} layers x {num_heads} heads); the table is of another model "
                             "or stale: rerun the syntax stage")
        paired.append(FoundHead(name, layer, head, random_same_layer_head(layer, head, num_heads, seed)))
    return paired


def unique_heads(found: Sequence[FoundHead]) -> list[tuple[int, int]]:
    """Every head to ablate once: several relations may share a best head (and its random partner)."""
    return list(dict.fromkeys([(f.layer, f.head) for f in found] + [(f.layer, f.random_head) for f in found]))


def result_rows(model: str, found: Sequence[FoundHead], mode: str, target: str, baseline: float,
                ablated: dict[tuple[int, int], float], n: int) -> list[dict[str, Any]]:
    rows = []
    for f in found:
        score, random_score = ablated[(f.layer, f.head)], ablated[(f.layer, f.random_head)]
        rows.append({"model": model, "source": f.source, "layer": f.layer, "head": f.head,
                     "head_label": head_label(f.layer, f.head), "random_head_label": head_label(f.layer, f.random_head),
                     "mode": mode, "target": target, "baseline": baseline, "ablated": score, "delta": score - baseline,
                     "random_ablated": random_score, "random_delta": random_score - baseline, "n": n})
    return rows


class AblatedFeatures:
    """The ``attn`` probe's features of the score split, recomputed by the pretrained model with heads disabled.

    :meth:`features` computes one variant (a set of disabled heads and their mode; none: unablated) for every
    sentence: forward passes over the sentences sorted by length, in batches of ``batch_size`` (little padding,
    few passes), then each sentence's features built as ``build_probe_features`` builds them from a dump:
    word-level maps (``to_word_level``), ROOT from the first special token, float16. One variant's features
    are held at a time.
    """

    def __init__(self, ablation: HeadAblation, model: Any, token_table: str | Path, example_ids: np.ndarray,
                 n_words: np.ndarray, *, device: str, batch_size: int) -> None:
        self.ablation, self.model, self.device, self.batch_size = ablation, model, device, int(batch_size)
        self.example_ids, self.n_words = example_ids, n_words
        table_ids, self.input_ids, self.token_types = read_examples(token_table)
        self.row_of = {int(e): i for i, e in enumerate(table_ids)}
        self.words_of_tokens = token_words(token_table)
        self.first_special = first_special_tokens(token_table)
        self.pad_id = family_of(model.config.model_type).pad_id(model.config)  # as extraction pads
        self.uses_token_types = getattr(model.config, "type_vocab_size", 0) > 1
        lengths = np.array([len(self.input_ids[self.row_of[int(e)]]) for e in example_ids], dtype=np.int64)
        self.by_length = np.argsort(lengths, kind="stable")
        num_features = ablation.num_layers * ablation.num_heads
        self.offsets = np.concatenate([[0], np.cumsum(num_features * (np.asarray(n_words, np.int64) + 1) ** 2)])
        self.has_unit = np.concatenate([word_has_unit(self.words_of_tokens[int(e)], int(k))
                                        for e, k in zip(example_ids, n_words)]) if len(example_ids) else \
            np.zeros(0, bool)

    def forward_batches(self, positions: Sequence[int], *, attentions: bool):
        """(positions, float16 maps (B, layers, heads, W, W) or None) per batch of ``positions``."""
        import torch

        for start in range(0, len(positions), self.batch_size):
            chunk = list(positions[start:start + self.batch_size])
            rows = [self.row_of[int(self.example_ids[p])] for p in chunk]
            batch = {k: v.to(self.device) for k, v in collate(self.input_ids, self.token_types, rows,
                                                               self.pad_id).items()}
            types = batch["token_type_ids"] if self.uses_token_types else None
            if attentions:
                maps = forward_attentions(self.model, batch["input_ids"], batch["attention_mask"], types)
                yield chunk, maps.cpu().numpy()
            else:
                with torch.inference_mode():
                    self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               **({"token_type_ids": types} if types is not None else {}))
                yield chunk, None

    def sentence_maps(self, position: int, maps: np.ndarray) -> np.ndarray:
        """(L*H, n+1, n+1) float16 features of one sentence from its row of a batch's token-level maps."""
        example_id = int(self.example_ids[position])
        token_word = self.words_of_tokens[example_id]
        n_tokens, n_words = len(token_word), int(self.n_words[position])
        words = to_word_level(ExampleMaps(example_id, maps[:, :, :n_tokens, :n_tokens]), token_word, n_words)
        units = extended_units(words.token_unit, words.unit_word, self.first_special.get(example_id), n_words)
        return sentence_features(words.attention, units).astype(np.float16)

    def features(self, heads: frozenset, mode: str | None) -> ProbeFeatures:
        """Every sentence's features with ``heads`` disabled in ``mode`` (none: the unablated model)."""
        values = np.empty(int(self.offsets[-1]), dtype=np.float16)
        self.ablation.set(heads, mode or "zero")
        try:
            for chunk, maps in self.forward_batches(self.by_length, attentions=True):
                for row, position in enumerate(chunk):
                    values[self.offsets[position]:self.offsets[position + 1]] = \
                        self.sentence_maps(position, maps[row]).reshape(-1)
        finally:
            self.ablation.clear()
        return ProbeFeatures(values, self.example_ids, self.n_words, self.offsets, self.has_unit,
                             self.ablation.num_layers, self.ablation.num_heads)


def probe_rows(model_name: str, found: Sequence[FoundHead], modes: Sequence[str], *, pretrained: str | Path,
               train_maps: str | Path, train_index: str | Path, train_annotation: str | Path,
               test_tokens: str | Path, test_annotation: str | Path, probe: dict[str, Any], batch_size: int,
               device: str, threads: int, offline: bool) -> list[dict[str, Any]]:
    """Rows of target PROBE_TARGET: the attn probe trained once, scored unablated and per (head, mode)."""
    train_features = ProbeFeatures.load(train_maps, train_index)
    _, model = load_ablatable(pretrained, offline=offline)
    model.to(device)
    ablation = HeadAblation(model)
    if (ablation.num_layers, ablation.num_heads) != (train_features.num_layers, train_features.num_heads):
        raise AtlasError(f"{train_maps}: features of {train_features.num_layers} x {train_features.num_heads} heads, "
                         f"the checkpoint {pretrained} has {ablation.num_layers} x {ablation.num_heads}; rerun "
                         "snakemake to rebuild the probe features of this model")
    glove = GloveLookup(None)  # the attn probe reads no word vectors
    exclude_punct = bool(probe["exclude_punct"])
    train_trees = read_trees(train_annotation)
    train = probe_sentences(train_trees, train_features.example_ids, train_features.has_unit_of(), glove,
                            exclude_punct=exclude_punct,
                            cache_index={int(e): i for i, e in enumerate(train_features.example_ids)})
    # The score split as probe_features caches it: every sentence of its token table, by example id.
    trees, words_of_tokens = read_trees(test_annotation), token_words(test_tokens)
    example_ids = np.array(sorted(words_of_tokens), dtype=np.int64)
    n_words = np.array([len(trees[int(e)][0]) for e in example_ids], dtype=np.int64)
    has_unit = {int(e): word_has_unit(words_of_tokens[int(e)], int(k)) for e, k in zip(example_ids, n_words)}
    test = probe_sentences(trees, example_ids, has_unit, glove, exclude_punct=exclude_punct,
                           cache_index={int(e): i for i, e in enumerate(example_ids)})
    heads = unique_heads(found)
    variants = [(frozenset(), None)] + [(frozenset({h}), mode) for mode in modes for h in heads]
    source = AblatedFeatures(ablation, model, test_tokens, example_ids, n_words, device=device,
                             batch_size=batch_size)
    if "mean" in modes:  # each head's mean output over the score split's real tokens (mode 'mean')
        with ablation.collecting_means():
            for _ in source.forward_batches(source.by_length, attentions=False):
                pass
    log.info("attn probe: %d training sentences; %d score-split sentences x %d variants (unablated + %d heads x %d "
             "mode(s))", len(train), len(test), len(variants), len(heads), len(modes))
    settings = {"epochs": int(probe["epochs"]), "lr": float(probe["lr"]), "seed": int(probe["seed"]),
                "batch_sentences": int(probe["batch_sentences"])}
    fitted, info = fit_probe("attn", train, FeatureSource("attn", train_features), threads=threads, **settings)
    del train_features, train
    test_batches = sentence_batches(test, settings["batch_sentences"])
    uas, started, last_log = np.zeros(len(variants)), time.perf_counter(), time.perf_counter()
    for v, (variant_heads, mode) in enumerate(variants):
        features = FeatureSource("attn", source.features(variant_heads, mode))
        correct, total = evaluate(fitted, features, test, test_batches)
        uas[v] = correct.sum() / max(total.sum(), 1)
        if v == 0:
            words = int(total.sum())
        if time.perf_counter() - last_log >= PROGRESS_EVERY_S or v == len(variants) - 1:
            log.info("ablated probe features: %d of %d variants (%d sentence passes each) in %.0f s", v + 1,
                     len(variants), len(test), time.perf_counter() - started)
            last_log = time.perf_counter()
    log.info("attn probe: unablated UAS %.4f on %d words (train UAS %.4f)", uas[0], words, info["train_uas"])
    rows = []
    for m, mode in enumerate(modes):
        ablated = {h: float(uas[1 + m * len(heads) + i]) for i, h in enumerate(heads)}
        rows += result_rows(model_name, found, mode, PROBE_TARGET, float(uas[0]), ablated, words)
    return rows


def task_rows(model_name: str, found: Sequence[FoundHead], modes: Sequence[str], *, checkpoint: str | Path,
              dev_path: str | Path, task: dict[str, Any], settings: dict[str, Any], max_examples: int,
              batch_size: int, device: str, offline: bool, mirror: str | Path | None) -> list[dict[str, Any]]:
    """Rows of target ``task:{task}``: the fine-tuned checkpoint's dev metric with each head disabled."""
    scorer = TaskScorer(checkpoint, dev_path, task=task, settings=settings, max_examples=max_examples,
                        batch_size=batch_size, device=device, offline=offline, mirror=mirror)
    for layer, head in unique_heads(found):
        scorer.ablation.check_head(layer, head, str(checkpoint))
    baseline, _ = scorer.baseline(list(modes))
    rows = []
    for mode in modes:
        ablated = {h: scorer.score({h}, mode)[0] for h in unique_heads(found)}
        rows += result_rows(model_name, found, mode, f"task:{scorer.spec.name}", baseline, ablated, len(scorer.data))
    log.info("task %s: %s %.4f unablated on %d dev examples; %d heads x %d mode(s) scored", scorer.spec.name,
             scorer.metric, baseline, len(scorer.data), len(unique_heads(found)), len(modes))
    return rows


def run_found_heads(*, dependency_best: str | Path, coref_best: str | Path | None, pretrained: str | Path,
                    finetuned: Sequence[str | Path], dev: Sequence[str | Path], tasks: Sequence[dict[str, Any]],
                    settings: Sequence[dict[str, Any]], train_maps: str | Path, train_index: str | Path,
                    train_annotation: str | Path, test_tokens: str | Path, test_annotation: str | Path,
                    output: str | Path, model: str, treebank: str, relations: Sequence[str], select_split: str,
                    score_split: str, modes: Sequence[str], max_examples: int, batch_size: int, device: str,
                    threads: int, random_seed: int, offline: bool, mirror: str | Path | None,
                    probe: dict[str, Any]) -> pd.DataFrame:
    """The found-heads check of one model; writes the tidy CSV (FOUND_HEADS_COLUMNS) and returns it.

    ``finetuned``, ``dev``, ``tasks`` and ``settings`` are aligned: task i's final checkpoint manifest, dev
    table, entry (TaskSpec params) and fine-tuning settings.
    """
    import torch

    from ..finetune.training import resolve_device

    if not len(finetuned) == len(dev) == len(tasks) == len(settings):
        raise AtlasError(f"found heads of {model}: {len(finetuned)} checkpoints, {len(dev)} dev tables, {len(tasks)} "
                         f"task entries and {len(settings)} settings; the rule must give one of each per task")
    torch.set_num_threads(max(1, int(threads)))
    modes = check_modes(list(modes))
    device = resolve_device(device)
    started = time.perf_counter()
    train_features = ProbeFeatures.load(train_maps, train_index)
    found = pair_found_heads(
        read_found_heads(dependency_best, coref_best, model=model, treebank=treebank, relations=relations,
                         select_split=select_split, score_split=score_split),
        train_features.num_layers, train_features.num_heads, random_seed, dependency_best)
    del train_features
    log.info("found heads of %s: %s", model, ", ".join(f"{f.source} {head_label(f.layer, f.head)} (random "
                                                        f"{head_label(f.layer, f.random_head)})" for f in found))
    rows = probe_rows(model, found, modes, pretrained=pretrained, train_maps=train_maps, train_index=train_index,
                      train_annotation=train_annotation, test_tokens=test_tokens, test_annotation=test_annotation,
                      probe=probe, batch_size=batch_size, device=device, threads=threads, offline=offline)
    for checkpoint, dev_path, task, task_settings in zip(finetuned, dev, tasks, settings):
        rows += task_rows(model, found, modes, checkpoint=checkpoint, dev_path=dev_path, task=task,
                          settings=task_settings, max_examples=max_examples, batch_size=batch_size, device=device,
                          offline=offline, mirror=mirror)
    frame = pd.DataFrame(rows, columns=FOUND_HEADS_COLUMNS)
    write_csv(frame, output)
    log.info("%d found-head rows written to %s in %.0f s", len(frame), output, time.perf_counter() - started)
    return frame
