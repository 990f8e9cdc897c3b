"""A tiny study's per-head tables, pattern features and example dumps, written for the head explorer's tests.

Every per-head value is known by construction: :func:`head_value` of the layer, the head and an offset per
quantity, so that a test can say which number the page must show for head (1, 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from support.dumps import write_dump, write_token_table

CLASSES = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block", "Heterogeneous")
SURFACE_COLUMNS = ("prev", "self", "next", "cls", "sep", "period", "comma", "entropy", "cls_entropy")


def head_value(layer: int, head: int, offset: float = 0.0, heads: int = 4) -> float:
    """A distinct value per head in (0, 1): what the tables hold for ``layer``, ``head``."""
    return round(0.01 + (layer * heads + head) / 1000 + offset, 6)


@dataclass
class ExplorerStudy:
    """Where the files of one tiny study are, in the shapes the explorer's functions take."""

    root: Path
    model: str
    layers: int
    heads: int
    tables: dict[str, Path] = field(default_factory=dict)
    pattern_parts: list[tuple[str, str, Path]] = field(default_factory=list)
    example_dumps: list[tuple[str, str, Path]] = field(default_factory=list)
    example_tokens: Path | None = None

    def build_kwargs(self, **overrides) -> dict:
        """Keyword arguments of workflow_scripts.explorer.page.head_explorer for this study."""
        kwargs = dict(pattern_parts=self.pattern_parts, relations=["all", "nsubj", "det"], select_split="train",
                      example_dumps=self.example_dumps, example_tokens=self.example_tokens, corpus="cola",
                      split="dev", examples=3, max_tokens=40, example_ids=None, max_megabytes=20)
        kwargs.update(overrides)
        return kwargs


def _heads(layers: int, heads: int) -> pd.DataFrame:
    return pd.DataFrame([(layer, h) for layer in range(layers) for h in range(heads)], columns=["layer", "head"])


def _value(frame: pd.DataFrame, heads: int, offset: float) -> pd.Series:
    return pd.Series([head_value(layer, h, offset, heads) for layer, h in zip(frame["layer"], frame["head"])])


def write_explorer_study(root: Path, *, model: str = "tiny", layers: int = 3, heads: int = 4,
                         tokens: dict[int, list[str]] | None = None, tasks: tuple[str, ...] = ("cola",),
                         relations: tuple[str, ...] = ("all", "nsubj", "det", "punct"), behaviours=("broad", "cls"),
                         treebanks: tuple[str, ...] = ("ewt",), seed: int = 0) -> ExplorerStudy:
    """Tables, pattern features, token table and two dumps (pretrained, cola final) of a tiny study."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    study = ExplorerStudy(root, model, layers, heads)
    grid = _heads(layers, heads)

    def save(name: str, frame: pd.DataFrame) -> None:
        study.tables[name] = root / f"{name}.csv"
        frame.to_csv(study.tables[name], index=False)

    save("models", pd.DataFrame({"name": [model], "num_layers": [layers], "num_heads": [heads]}))
    surface = []
    for checkpoint, shift in (("pretrained", 0.0), ("random", 0.5)):
        part = grid.assign(model=model, checkpoint=checkpoint, corpus="wiki", split="segments", n_examples=4)
        for k, column in enumerate(SURFACE_COLUMNS):
            part[column] = _value(grid, heads, shift + k / 100)
            part[f"{column}_low"], part[f"{column}_high"] = part[column] - 0.001, part[column] + 0.001
        surface.append(part)
    save("surface_heads", pd.concat(surface))
    distance = grid.assign(model=model, checkpoint="pretrained", mean_distance=_value(grid, heads, 2.0))
    save("attention_distance", distance.assign(mean_distance_low=distance["mean_distance"] - 0.1,
                                               mean_distance_high=distance["mean_distance"] + 0.1))
    save("head_clusters", grid.assign(model=model, checkpoint="pretrained", x=_value(grid, heads, 0.0),
                                      y=rng.normal(size=len(grid)), mean_js_to_others=0.3, n_examples=4,
                                      distance="js_divergence",
                                      behaviour=[behaviours[i % len(behaviours)] for i in range(len(grid))]))
    dependency = []
    for treebank in treebanks:
        for r, relation in enumerate(relations):
            for d, direction in enumerate(("dependent_to_head", "head_to_dependent")):
                for select in ("train", "dev"):
                    part = grid.assign(model=model, checkpoint="pretrained", treebank=treebank, relation=relation,
                                       direction=direction, select_split=select, score_split="dev", n=100 + r)
                    part["accuracy"] = _value(grid, heads, 0.1 * r + 0.05 * d)
                    dependency.append(part.assign(ci_low=part["accuracy"] - 0.01, ci_high=part["accuracy"] + 0.01))
    save("dependency_heads", pd.concat(dependency))
    coref = [grid.assign(model=model, checkpoint="pretrained", mention_type=kind, n=50,
                         accuracy=_value(grid, heads, 0.2 + k / 10)) for k, kind in enumerate(("all", "pronoun"))]
    save("coref_heads", pd.concat(coref).assign(ci_low=lambda f: f["accuracy"] - 0.02,
                                                ci_high=lambda f: f["accuracy"] + 0.02))
    change, lexical = [], []
    for t, task in enumerate(tasks):
        final = f"{task}.seed42.final"
        for step, checkpoint in (("final", final), ("50", f"{task}.seed42.step50")):
            part = grid.assign(model=model, task=task, checkpoint=checkpoint, seed=42, step=step)
            part["cosine"] = 1 - _value(grid, heads, t / 10)
            change.append(part.assign(ci_low=part["cosine"] - 0.01, ci_high=part["cosine"] + 0.01))
        for checkpoint in ("pretrained", final):
            for c, category in enumerate(("content", "function", "other")):
                lexical.append(grid.assign(model=model, checkpoint=checkpoint, task=task, category=category,
                                           argmax_share=_value(grid, heads, c / 10)))
            # Vertical (0) or Heterogeneous (4) by the parity of layer + head + example, flipped after fine-tuning.
            flip = checkpoint != "pretrained"
            features = pd.DataFrame([(e, layer, h, CLASSES[(layer + h + e + flip) % 2 * 4])
                                     for e in range(3) for layer in range(layers) for h in range(heads)],
                                    columns=["example_id", "layer", "head", "rule_class"])
            path = root / "patterns" / checkpoint / task / "pattern_features.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            features.to_parquet(path)
            study.pattern_parts.append((checkpoint, task, path))
    save("finetune_change", pd.concat(change))
    save("lexical_heads", pd.concat(lexical))

    tokens = tokens or {0: ["[CLS]", "the", "cat", "sat", "down", ".", "[SEP]"],
                        1: ["[CLS]", "a", "dog", "ran", "off", "quickly", ".", "[SEP]"],
                        2: ["[CLS]", "it", "rained", "all", "day", ".", "[SEP]"]}
    study.example_tokens = write_token_table(root / "tokens.parquet", tokens,
                                             {i: [t in ("[CLS]", "[SEP]") for t in ts] for i, ts in tokens.items()})
    for checkpoint, label in (("pretrained", "pretrained"), (f"{tasks[0]}.seed42.final", f"fine-tuned on {tasks[0]}")):
        maps = {}
        for example_id, strings in tokens.items():
            weights = rng.random((layers, heads, len(strings), len(strings)))
            maps[example_id] = (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float16)
        directory = root / "dumps" / checkpoint
        write_dump(directory, maps)
        study.example_dumps.append((checkpoint, label, directory))
    return study
