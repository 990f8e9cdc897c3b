"""Figures of the syntax analyses (METHODS 7.3): accuracy heatmaps and example maps of the best heads.

Head labels in figures are 1-based "layer-head" as in [C]; the tables stay 0-based. Each figure
is drawn per treebank: it keeps that treebank's rows of the tables (all rows of a table without a
``treebank`` column, written before the tables had one), and shows the relations of
``syntax.relations`` that the table has for it (an unlabelled treebank: ``all`` only).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..attention.annotate import read_trees
from ..attention.reader import AttentionDump, to_word_level
from ..attention.tokens import token_words
from ..core.errors import AtlasError
from ..core.figures import literal_text, save_figure
from ..core.labels import (
    CAUSAL_UNION,
    DEP_TO_HEAD,
    DEP_TO_PRECEDING_HEAD,
    EITHER,
    HEAD_TO_DEP,
    HEAD_TO_PRECEDING_DEP,
    head_label,
)
from .dependency import ALL

log = logging.getLogger(__name__)

ARROWS = {DEP_TO_HEAD: "dep→head", HEAD_TO_DEP: "head→dep", DEP_TO_PRECEDING_HEAD: "dep→earlier head",
          HEAD_TO_PRECEDING_DEP: "head→earlier dep", CAUSAL_UNION: "each arc as a causal map allows"}


def of_treebank(table: pd.DataFrame, treebank: str | None) -> pd.DataFrame:
    """The rows of ``treebank`` (every row where it is None or the table has no ``treebank`` column)."""
    if treebank is None or "treebank" not in table.columns:
        return table
    return table[table["treebank"].astype(str) == treebank]


def _named(model: str, checkpoint: str, treebank: str | None) -> str:
    return f"{model} / {checkpoint}" + (f" / {treebank}" if treebank else "")


def _best(best: pd.DataFrame, model: str, checkpoint: str, relation: str, select_split: str,
          score_split: str) -> pd.Series | None:
    """The held-out best head of a relation: over both directions (`either`), or dep->head for `all`; a causal
    model's over the union of what its maps allow."""
    for direction in (DEP_TO_HEAD if relation == ALL else EITHER, CAUSAL_UNION):
        rows = best[(best["model"] == model) & (best["checkpoint"] == checkpoint) & (best["relation"] == relation)
                    & (best["direction"] == direction) & (best["select_split"] == select_split)
                    & (best["score_split"] == score_split)]
        if len(rows):
            return rows.iloc[0]
    return None


def dependency_heatmaps(heads_csv: str | Path, best_csv: str | Path, png: str | Path, pdf: str | Path, *,
                        model: str, checkpoint: str, relations: Sequence[str], select_split: str,
                        score_split: str, treebank: str | None = None) -> None:
    """One layer x head accuracy panel per relation (on the score split), best held-out head boxed;
    ``treebank``: the treebank whose rows are drawn (None: every row)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    heads = of_treebank(pd.read_csv(heads_csv), treebank)
    best = of_treebank(pd.read_csv(best_csv), treebank)
    heads = heads[(heads["model"] == model) & (heads["checkpoint"] == checkpoint)
                  & (heads["select_split"] == score_split) & (heads["score_split"] == score_split)]
    if heads.empty:
        raise AtlasError(f"{heads_csv}: no rows for {_named(model, checkpoint, treebank)} scored on {score_split}")
    layers, n_heads = int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1
    shown = [r for r in relations if r in set(heads["relation"])]
    columns = min(4, max(len(shown), 1))
    rows = math.ceil(len(shown) / columns) if shown else 1
    figure, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, (0.3 * layers + 1.6) * rows + 0.6),
                                squeeze=False, constrained_layout=True)
    image = None
    for ax, relation in zip(axes.flat, shown):
        choice = _best(best, model, checkpoint, relation, select_split, score_split)
        direction = choice["head_direction"] if choice is not None else DEP_TO_HEAD
        panel = heads[(heads["relation"] == relation) & (heads["direction"] == direction)]
        grid = np.full((layers, n_heads), np.nan)
        grid[panel["layer"].to_numpy(), panel["head"].to_numpy()] = panel["accuracy"].to_numpy()
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        title = f"{relation} ({ARROWS[direction]}), n={int(panel['n'].iloc[0]) if len(panel) else 0}"
        if choice is not None:
            ax.add_patch(Rectangle((choice["head"] - 0.5, choice["layer"] - 0.5), 1, 1, fill=False, edgecolor="red",
                                   linewidth=1.8))
            title += (f"\nbest {choice['head_label']}: {choice['accuracy']:.0%}; "
                      f"offset {int(choice['baseline_offset']):+d}: {choice['baseline_accuracy']:.0%}")
        ax.set_title(title, fontsize=8)
        ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)], fontsize=6)
        ax.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=6)
        ax.set_xlabel("head", fontsize=7)
        ax.set_ylabel("layer", fontsize=7)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.6, label=f"accuracy on {score_split}")
    skipped = [r for r in relations if r not in set(heads["relation"])]
    # An unlabelled treebank (Malt-TAB) has only 'all': the figure says which relations it skipped and why.
    note = (f"\nnot in this treebank's labels, skipped: {', '.join(skipped)}"
            + (" (unlabelled treebank: no relation labels)" if shown == ["all"] else "") if skipped else "")
    figure.suptitle(f"{_named(model, checkpoint, treebank)}: each head as a parser, per relation (box: best head "
                    f"selected on {select_split}){note}", fontsize=10 if not skipped else 8)
    save_figure(figure, png, pdf)


def choose_sentence(trees: dict, relations: Sequence[str], *, min_words: int = 8, max_words: int = 16) -> int:
    """A short sentence with as many of ``relations`` as possible (first such by example id); where no sentence
    has ``min_words``..``max_words`` words (a corpus limited to a few sentences), the one with most of them."""
    wanted = set(relations) - {ALL}
    for lengths in ((min_words, max_words), (0, math.inf)):
        best_id, best_score = None, -1
        for example_id in sorted(trees):
            words, _, _, deprels = trees[example_id]
            if not lengths[0] <= len(words) <= lengths[1]:
                continue
            score = len(wanted & set(deprels))
            if score > best_score:
                best_id, best_score = example_id, score
        if best_id is not None:
            return best_id
    raise AtlasError("no sentence to choose from")


def held_example_ids(dump: AttentionDump, token_table: str | Path) -> set[int]:
    """The examples that both the dump and the token table hold.

    ``attention.max_examples`` keeps only the first N examples of a corpus in its token tables and dumps, while
    the annotation (the trees) keeps them all: a sentence is drawn only where its maps and tokens exist.
    """
    tokens = pq.read_table(token_table, columns=["example_id"])["example_id"]
    return {int(i) for i in pc.unique(tokens).to_pylist()} & set(dump.shard_example_ids(dump.shard_files))


def drawn_sentence(trees: dict, held: set[int], relations: Sequence[str], example_id: int | None,
                   annotation: str | Path) -> tuple[int, str]:
    """The sentence to draw, among those the dump holds, and the caption's note on how it was chosen.

    A configured ``example_id`` (``syntax.figure_example_id``) that the dump does not hold (cut off by
    ``attention.max_examples``) is replaced by a chosen one, which the note (and the log) says; one that the
    annotation does not have either is a wrong id, refused.
    """
    drawable = {i: tree for i, tree in trees.items() if i in held}
    if not drawable:
        raise AtlasError(f"none of the {len(trees)} sentences of {annotation} is in the dump and its token table; "
                         "rerun snakemake to rebuild them")
    if example_id is not None and example_id not in trees:
        raise AtlasError(f"example {example_id}, the sentence to draw, is not in {annotation}")
    among = (f" among the {len(drawable)} of {len(trees)} sentences the dump holds (attention.max_examples)"
             if len(drawable) < len(trees) else "")
    if example_id is None:
        chosen = choose_sentence(drawable, relations)
        if among:
            log.info("sentence %d chosen%s", chosen, among)
        return chosen, f"sentence chosen{among}" if among else ""
    if example_id in drawable:
        return example_id, ""
    chosen = choose_sentence(drawable, relations)
    note = f"sentence {example_id} (syntax.figure_example_id) is not in the dump: sentence {chosen} chosen{among}"
    log.warning("%s", note)
    return chosen, note


def best_head_maps(dump_dir: str | Path, token_table: str | Path, annotation: str | Path, best_csv: str | Path,
                   png: str | Path, pdf: str | Path, *, model: str, checkpoint: str, relations: Sequence[str],
                   select_split: str, score_split: str, example_id: int | None, treebank: str | None = None,
                   max_panels: int = 8) -> None:
    """Word-level maps of the best head of each relation on one sentence, gold arcs of the relation marked;
    ``treebank``: the treebank of the annotation, whose best heads are drawn (None: every row).

    The sentence is one that the dump and token table hold (:func:`drawn_sentence`): with
    ``attention.max_examples`` they keep only the first sentences of the annotation.
    """
    import matplotlib.pyplot as plt

    trees = read_trees(annotation)
    best = of_treebank(pd.read_csv(best_csv), treebank)
    relations = [r for r in relations if r in set(best["relation"].astype(str))]
    dump = AttentionDump(dump_dir)
    example_id, note = drawn_sentence(trees, held_example_ids(dump, token_table), relations, example_id, annotation)
    words, _, gold_heads, deprels = trees[example_id]
    token_word = token_words(token_table, [example_id])[example_id]
    maps = to_word_level(dump.get(example_id), token_word, len(words))
    tokens = pq.read_table(token_table, columns=["example_id", "token"], filters=[("example_id", "=", example_id)])
    tokens = tokens["token"].to_pylist()
    labels = []
    for unit, word in enumerate(maps.unit_word):
        if word >= 0:
            labels.append(words[word])
        else:
            members = np.flatnonzero(maps.token_unit == unit)
            labels.append(tokens[members[0]] if len(members) else "?")
    present = [r for r in relations if r == ALL or r in deprels or any(d.split(":")[0] + ":*" == r for d in deprels)]
    panels = [(r, c) for r in present
              if (c := _best(best, model, checkpoint, r, select_split, score_split)) is not None]
    panels = panels[:max_panels]
    if not panels:
        raise AtlasError(f"sentence {example_id} has none of the relations {list(relations)}")
    columns = min(4, len(panels))
    rows = math.ceil(len(panels) / columns)
    size = len(labels)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 4.6 * rows), squeeze=False,
                                constrained_layout=True)
    unit_of_word = {int(w): u for u, w in enumerate(maps.unit_word) if w >= 0}
    for ax, (relation, choice) in zip(axes.flat, panels):
        layer, head = int(choice["layer"]), int(choice["head"])
        direction = choice["head_direction"]
        ax.imshow(maps.attention[layer, head], vmin=0, vmax=1, cmap="Blues")
        for dependent, gold in enumerate(gold_heads):
            matches = relation == ALL or deprels[dependent] == relation or \
                (relation.endswith(":*") and deprels[dependent].split(":")[0] == relation[:-2])
            if gold < 0 or not matches or dependent not in unit_of_word or gold not in unit_of_word:
                continue
            row, column = unit_of_word[dependent], unit_of_word[gold]
            if direction in (HEAD_TO_DEP, HEAD_TO_PRECEDING_DEP) or (direction == CAUSAL_UNION and gold > dependent):
                row, column = column, row  # the head's row: a causal map holds a later head's attention to it
            ax.plot(column, row, marker="o", markersize=7, markerfacecolor="none", markeredgecolor="red")
        ax.set_xticks(range(size), [literal_text(label) for label in labels], rotation=90, fontsize=6)
        ax.set_yticks(range(size), [literal_text(label) for label in labels], fontsize=6)
        ax.set_title(f"{relation}: head {head_label(layer, head)} ({ARROWS[direction]}), "
                     f"{choice['accuracy']:.0%} on {score_split}", fontsize=8)
        ax.set_xlabel("attended word", fontsize=7)
        ax.set_ylabel("attending word", fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    figure.suptitle(f"{_named(model, checkpoint, treebank)}, {Path(annotation).stem} sentence {example_id}: best "
                    "heads' word-level attention (circles: gold arcs of the relation)" + (f"\n{note}" if note else ""),
                    fontsize=9)
    save_figure(figure, png, pdf)
