"""The cross-model atlas (docs/report.md, "tables/atlas.csv"): every model's heads in each role, placed by relative
depth, from the tables the study already makes, one row per (model, checkpoint, role, detail, layer, head).

Roles, each from its own table (a study without the table has no rows for the role):

- ``sink``, ``previous_token``, ``induction`` (head_diagnostics.csv): alpha_1 and the previous-token share on
  natural text (random tokens where a model has no natural rows), the induction score on repeated random tokens;
- ``dependency`` (dependency_best.csv): each relation's best head (``detail``: the relation) on the syntax treebank,
  selected on ``select_split`` and scored on ``score_split``, in the ``either`` direction ([C]'s Table 1;
  ``dependent_to_head`` for ``all``), the ``causal_union`` for a decoder: the found heads' choice (docs/ablation.md);
- ``coreference`` (coref_best.csv): the best head (method ``head``, mention type ``all``, all documents);
- ``dependency_accuracy`` (dependency_heads.csv): every head's accuracy per relation (``detail``) on the score split
  of the syntax treebank, in [C]'s better direction of the two (``either``: the higher of dependent -> head and
  head -> dependent; ``all``: dependent -> head; a decoder's ``causal_union``), so that a relation's heads rank;
- ``coreference_accuracy`` (coref_heads.csv): every head's accuracy on all mentions of all documents;
- ``pattern:CLASS`` (the pattern features of each analysed task's dev inputs): the share of the head's maps that
  [K]'s rules put in the class (``detail``: the task); Heterogeneous, the class of maps with no pattern, is no role;
- ``causal_importance`` (head_disabling.csv): the drop of the fine-tuned checkpoint's dev metric when the head is
  disabled alone (-delta; ``detail``: task, metric, mode), on fine-tuned checkpoints only.

Each role is on every checkpoint its table measures but the random-init control: the pretrained checkpoint, and a
fine-tuned one where the study measures the role there (the pattern classes of each fine-tuned task's final
checkpoint on its own dev inputs; the diagnostics, dependency and coreference heads of the checkpoints of
roles.finetuned, docs/roles.md, and of those attention.checkpoints dumps), so that tables/role_agreement.csv can set a
role's heads before and after fine-tuning side by side. A checkpoint whose treebank dump is its score split alone
(roles.finetuned) has ``dependency_accuracy`` but no ``dependency`` row: the best head there is selected on the
selection split. ``random_score`` is the same role of the same head (same input, relation, direction) on the model's
random-init checkpoint, where the study measured it there.

:mod:`.atlas_halves` makes tables/atlas_halves.csv: the same roles' scores on two halves of the examples, the
split-half floor of tables/role_agreement.csv.

Signal subjects (``MODEL@SIGNAL``) are left out: the atlas compares models' attention weights, and
tables/signal_comparison.csv sets the signals side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import read_csv, write_csv
from ..core.table_names import (
    COREF_BEST,
    COREF_HEADS,
    DEPENDENCY_BEST,
    DEPENDENCY_HALVES,
    DEPENDENCY_HEADS,
    HEAD_DIAGNOSTICS,
    HEAD_DIAGNOSTICS_HALVES,
    HEAD_DISABLING,
    MODELS,
)

PRETRAINED, RANDOM = "pretrained", "random"
SINK_INPUTS = ("natural", "random")  # the first a model has
INDUCTION_INPUT = "random_repeated"
EITHER, DEP_TO_HEAD, CAUSAL_UNION, ALL = "either", "dependent_to_head", "causal_union", "all"
NO_PATTERN = "Heterogeneous"
# Roles in the order of the figure's panels (pattern roles come after coreference, in [K]'s class order).
ROLE_ORDER = ("sink", "previous_token", "induction", "dependency", "dependency_accuracy", "coreference",
              "coreference_accuracy")
LAST_ROLE = "causal_importance"
# The roles of every head's accuracy: the atlas figure draws the best-head roles of the same quantities instead.
ACCURACY_ROLES = ("dependency_accuracy", "coreference_accuracy")
# The study tables the roles come from (the atlas rule's named inputs; the report's plan lists those planned).
ATLAS_INPUTS = (HEAD_DIAGNOSTICS, DEPENDENCY_BEST, DEPENDENCY_HEADS, COREF_BEST, COREF_HEADS,
                HEAD_DISABLING, HEAD_DIAGNOSTICS_HALVES, DEPENDENCY_HALVES)
ROLE_COLUMNS = ["model", "checkpoint", "role", "detail", "layer", "head", "score", "ci_low", "ci_high",
                "random_score"]
MODEL_COLUMNS = ["model", "family", "parameters", "series", "revision", "step", "num_layers", "num_heads"]
COLUMNS = ["model", "family", "parameters", "series", "revision", "step", "checkpoint", "role", "detail", "layer",
           "num_layers", "relative_depth", "head", "score", "ci_low", "ci_high", "random_score", "rank", "num_heads"]


def relative_depth(layer: np.ndarray | pd.Series | int, num_layers: np.ndarray | pd.Series | int) -> np.ndarray:
    """(layer + 0.5) / layers, layer counted from 0: the centre of the slice of depth the layer holds. Defined for a
    one-layer model, and a layer of a 4-layer model sits where the two layers it becomes in an 8-layer model sit on
    average (layer 1 of 4: 0.375, layers 2 and 3 of 8: 0.3125 and 0.4375); layer / (layers - 1) would pin the
    first and last layers to 0 and 1 and is undefined for one layer."""
    return (np.asarray(layer, dtype=float) + 0.5) / np.asarray(num_layers, dtype=float)


def _with_control(found: pd.DataFrame, control: pd.DataFrame | None, keys: list[str], column: str) -> pd.DataFrame:
    """``found`` with ``random_score``: ``column`` of the ``control`` row with the same ``keys`` (NaN where none)."""
    if control is None or control.empty:
        return found.assign(random_score=np.nan)
    control = control[keys + [column]].drop_duplicates(keys).rename(columns={column: "random_score"})
    return found.merge(control, on=keys, how="left")


def _role_frame(rows: pd.DataFrame, role: str, detail: str | pd.Series, score: str, low: str | None,
                high: str | None) -> pd.DataFrame:
    return pd.DataFrame({
        "model": rows["model"].astype(str).to_numpy(), "checkpoint": rows["checkpoint"].astype(str).to_numpy(),
        "role": role, "detail": detail if isinstance(detail, str) else detail.astype(str).to_numpy(),
        "layer": rows["layer"].astype(int).to_numpy(), "head": rows["head"].astype(int).to_numpy(),
        "score": rows[score].astype(float).to_numpy(),
        "ci_low": rows[low].astype(float).to_numpy() if low else np.nan,
        "ci_high": rows[high].astype(float).to_numpy() if high else np.nan,
        "random_score": rows["random_score"].astype(float).to_numpy()})


def diagnostic_roles(diagnostics: pd.DataFrame) -> pd.DataFrame:
    """The sink, previous-token and induction roles of every head of head_diagnostics.csv."""
    frames = []
    for role, column, inputs in (("sink", "first_token", SINK_INPUTS),
                                 ("previous_token", "previous_token", SINK_INPUTS),
                                 ("induction", "induction", (INDUCTION_INPUT,))):
        for _, rows in diagnostics.groupby(diagnostics["model"].astype(str), sort=False):
            measured = rows[rows["checkpoint"].astype(str) != RANDOM]
            # One input per model, the pretrained checkpoint's first: every checkpoint's rows of a role compare.
            pretrained = measured[measured["checkpoint"].astype(str) == PRETRAINED]
            kinds = set((pretrained if len(pretrained) else measured)["input"].astype(str))
            source = next((kind for kind in inputs if kind in kinds), None)
            if source is None:
                continue
            found = measured[measured["input"].astype(str) == source].dropna(subset=[column])
            control = rows[(rows["checkpoint"].astype(str) == RANDOM) & (rows["input"].astype(str) == source)]
            found = _with_control(found, control, ["layer", "head"], column)
            frames.append(_role_frame(found, role, source, column, f"{column}_low", f"{column}_high"))
    return _stack(frames)


def dependency_roles(best: pd.DataFrame, heads: pd.DataFrame | None, *, treebank: str, select_split: str,
                     score_split: str) -> pd.DataFrame:
    """Each relation's best head of dependency_best.csv (see the module's docstring for the direction), with the
    same head's accuracy on the random-init checkpoint from dependency_heads.csv."""
    protocol = ((best["treebank"].astype(str) == treebank) & (best["select_split"].astype(str) == select_split)
                & (best["score_split"].astype(str) == score_split) & (best["checkpoint"].astype(str) != RANDOM))
    best = best[protocol].dropna(subset=["layer", "head", "accuracy"])
    frames = []
    for _, rows in best.groupby([best["model"].astype(str), best["checkpoint"].astype(str)], sort=False):
        directions = set(rows["direction"].astype(str))
        if CAUSAL_UNION in directions:
            chosen = rows["direction"].astype(str) == CAUSAL_UNION
        else:
            wanted = np.where(rows["relation"].astype(str) == ALL, DEP_TO_HEAD, EITHER)
            chosen = rows["direction"].astype(str).to_numpy() == wanted
        frames.append(rows[chosen])
    found = _stack(frames, like=best)
    found = found.assign(head_direction=found["head_direction"].fillna(found["direction"]).astype(str),
                         layer=found["layer"].astype(int), head=found["head"].astype(int))
    control = None
    if heads is not None:
        control = heads[(heads["checkpoint"].astype(str) == RANDOM) & (heads["treebank"].astype(str) == treebank)
                        & (heads["select_split"].astype(str) == select_split)
                        & (heads["score_split"].astype(str) == score_split)]
        control = control.assign(head_direction=control["direction"].astype(str), model=control["model"].astype(str),
                                 relation=control["relation"].astype(str))
        found = found.assign(model=found["model"].astype(str), relation=found["relation"].astype(str))
    found = _with_control(found, control, ["model", "relation", "head_direction", "layer", "head"], "accuracy")
    return _role_frame(found, "dependency", found["relation"], "accuracy", "ci_low", "ci_high")


def dependency_accuracy_roles(heads: pd.DataFrame, *, treebank: str, score_split: str, score: str = "accuracy",
                              low: str | None = "ci_low", high: str | None = "ci_high",
                              relations: Sequence[str] | None = None) -> pd.DataFrame:
    """Every head's ``score`` per relation of dependency_heads.csv (or dependency_halves.csv) on ``score_split``, of
    ``relations`` (syntax.relations, the dependency role's; None: every relation the table has), in the direction
    the module's docstring says, with the random-init checkpoint's, chosen the same way."""
    rows = heads[(heads["treebank"].astype(str) == treebank) & (heads["score_split"].astype(str) == score_split)]
    if relations is not None:
        rows = rows[rows["relation"].astype(str).isin(list(relations))]
    if "select_split" in rows:  # one selection's rows hold each head's score-split accuracy once
        rows = rows[rows["select_split"].astype(str) == score_split]
    rows = rows.assign(model=rows["model"].astype(str), checkpoint=rows["checkpoint"].astype(str),
                       relation=rows["relation"].astype(str), direction=rows["direction"].astype(str),
                       layer=rows["layer"].astype(int), head=rows["head"].astype(int),
                       value=pd.to_numeric(rows[score], errors="coerce"))
    causal = rows.groupby("model")["direction"].transform(lambda d: (d == CAUSAL_UNION).any())
    fixed = np.where(causal, CAUSAL_UNION, np.where(rows["relation"] == ALL, DEP_TO_HEAD, ""))
    rows = rows[(fixed == "") | (rows["direction"].to_numpy() == fixed)]
    # [C]'s either: each head's better direction (the first listed on a tie), over the directions it has.
    rows = rows.sort_values("value", ascending=False, kind="stable", na_position="last")
    keys = ["model", "checkpoint", "relation", "layer", "head"]
    rows = rows.drop_duplicates(keys).sort_values(keys, kind="stable")
    found = rows[rows["checkpoint"] != RANDOM]
    control = rows[rows["checkpoint"] == RANDOM]
    found = _with_control(found, control, ["model", "relation", "layer", "head"], "value")
    return _role_frame(found, "dependency_accuracy", found["relation"], "value", low, high)


def coreference_accuracy_roles(heads: pd.DataFrame, *, score: str = "accuracy", low: str | None = "ci_low",
                               high: str | None = "ci_high") -> pd.DataFrame:
    """Every head's ``score`` on all mentions of coref_heads.csv, with the random-init checkpoint's."""
    rows = heads[heads["mention_type"].astype(str) == ALL]
    rows = rows.assign(model=rows["model"].astype(str), checkpoint=rows["checkpoint"].astype(str),
                       layer=rows["layer"].astype(int), head=rows["head"].astype(int))
    found, control = rows[rows["checkpoint"] != RANDOM], rows[rows["checkpoint"] == RANDOM]
    found = _with_control(found, control, ["model", "layer", "head"], score)
    return _role_frame(found, "coreference_accuracy", "all mentions", score, low, high)


def coreference_roles(best: pd.DataFrame, heads: pd.DataFrame | None) -> pd.DataFrame:
    """The best coreference head of coref_best.csv (method head, mention type all, selected and scored on all
    documents), with the same head's accuracy on the random-init checkpoint from coref_heads.csv."""
    found = best[(best["checkpoint"].astype(str) != RANDOM) & (best["method"].astype(str) == "head")
                 & (best["mention_type"].astype(str) == ALL) & (best["select_documents"].astype(str) == ALL)
                 & (best["score_documents"].astype(str) == ALL)].dropna(subset=["layer", "head", "accuracy"])
    found = found.assign(model=found["model"].astype(str), layer=found["layer"].astype(int),
                         head=found["head"].astype(int))
    control = None
    if heads is not None:
        control = heads[(heads["checkpoint"].astype(str) == RANDOM) & (heads["mention_type"].astype(str) == ALL)]
        control = control.assign(model=control["model"].astype(str), layer=control["layer"].astype(int),
                                 head=control["head"].astype(int))
    found = _with_control(found, control, ["model", "layer", "head"], "accuracy")
    return _role_frame(found, "coreference", "all mentions", "accuracy", "ci_low", "ci_high")


def pattern_roles(model: str, task: str, features: pd.DataFrame, control: pd.DataFrame | None = None, *,
                  checkpoint: str = PRETRAINED, classes: Sequence[str] = ()) -> pd.DataFrame:
    """Per head and rule class but Heterogeneous, the share of the head's maps in the class (pattern features of
    ``model``'s ``checkpoint`` on ``task``; ``control``: the random-init checkpoint's, where the study has them). A
    class no map of a head falls in scores 0 for that head; a class no map at all falls in has no rows unless
    ``classes`` names it (the classes of the model's other checkpoints on the task: a class a fine-tuned checkpoint
    lost scores 0 there, rather than vanishing); no interval (the features file has none)."""
    def shares(frame: pd.DataFrame) -> pd.DataFrame:
        table = pd.crosstab([frame["layer"].astype(int), frame["head"].astype(int)], frame["rule_class"].astype(str),
                            normalize="index")
        table = table.reindex(columns=list(dict.fromkeys([*table.columns, *classes])), fill_value=0.0)
        table.columns.name = "rule_class"
        return table.stack().rename("share").reset_index().rename(columns={"rule_class": "class"})

    found = shares(features)
    found = found[found["class"] != NO_PATTERN].assign(model=model, checkpoint=checkpoint)
    found = _with_control(found, None if control is None else shares(control), ["layer", "head", "class"], "share")
    frames = [_role_frame(rows, f"pattern:{name}", task, "share", None, None)
              for name, rows in found.groupby("class", sort=False)]
    return _stack(frames)


def disabling_roles(disabling: pd.DataFrame) -> pd.DataFrame:
    """Each head's causal importance on each fine-tuned run of head_disabling.csv: the metric's drop when the head
    is disabled alone (-delta)."""
    rows = disabling.dropna(subset=["delta"]).assign(random_score=np.nan)
    rows = rows.assign(importance=-rows["delta"].astype(float))
    detail = rows["task"].astype(str) + " " + rows["metric"].astype(str) + ", " + rows["mode"].astype(str)
    return _role_frame(rows, LAST_ROLE, detail, "importance", None, None)


PATTERN_COLUMNS = ["example_id", "layer", "head", "rule_class"]


def read_pattern_features(patterns: Sequence[tuple[str, str, str, str | Path]]) -> dict[tuple[str, str, str],
                                                                                         pd.DataFrame]:
    """(model, checkpoint, task) -> the rule class of each of its maps (pattern_features.parquet)."""
    return {(m, c, t): pd.read_parquet(path, columns=PATTERN_COLUMNS) for m, c, t, path in patterns}


def pattern_frames(features: Mapping[tuple[str, str, str], pd.DataFrame]) -> list[pd.DataFrame]:
    """The pattern roles of every (model, checkpoint, task) but the random-init control's, each checkpoint scored on
    every class any checkpoint of the model has on the task."""
    classes: dict[tuple[str, str], set[str]] = {}
    for (model, checkpoint, task), frame in features.items():
        if checkpoint != RANDOM:
            classes.setdefault((model, task), set()).update(frame["rule_class"].astype(str))
    return [pattern_roles(model, task, frame, features.get((model, RANDOM, task)), checkpoint=checkpoint,
                          classes=sorted(classes[model, task] - {NO_PATTERN}))
            for (model, checkpoint, task), frame in features.items() if checkpoint != RANDOM]


def model_info(models: pd.DataFrame, family_of: Callable[[str | None], str], parameters: Mapping[str, int | None],
               revisions: Mapping[str, Sequence]) -> pd.DataFrame:
    """One row per model of models.csv: family, parameters (None: unknown), the model it is a revision of
    (``series``: itself otherwise), the revision and its training step (``revisions``: model -> [series, revision,
    step])."""
    rows = []
    for card in models.itertuples(index=False):
        model = str(card.name)
        series, revision, step = revisions.get(model, (model, None, None))
        model_type = None if pd.isna(card.model_type) else str(card.model_type)
        rows.append({"model": model, "family": family_of(model_type), "parameters": parameters.get(model),
                     "series": series, "revision": revision, "step": step, "num_layers": int(card.num_layers),
                     "num_heads": int(card.num_heads)})
    return pd.DataFrame(rows, columns=MODEL_COLUMNS).astype({"parameters": "Int64", "step": "Int64"})


def assemble(roles: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """The atlas: role rows of the models ``info`` lists, with the model's columns, relative depth and the head's
    rank in its (model, checkpoint, role, detail) by score (1: highest), ordered as the figure reads them."""
    frame = roles.merge(info, on="model", how="inner")
    outside = (frame["layer"] < 0) | (frame["layer"] >= frame["num_layers"])
    if outside.any():
        bad = frame[outside].iloc[0]
        raise AtlasError(f"the {bad['role']} row of model {bad['model']!r} names layer {bad['layer']}, outside its "
                         f"{bad['num_layers']} layers (tables/{MODELS}.csv)")
    frame["relative_depth"] = relative_depth(frame["layer"], frame["num_layers"])
    group = ["model", "checkpoint", "role", "detail"]
    frame["rank"] = frame.groupby(group)["score"].rank(ascending=False, method="first").astype("Int64")
    frame["role_order"] = frame["role"].map(role_position)
    frame = frame.sort_values(["family", "parameters", "series", "step", "model", "role_order", "checkpoint",
                               "detail", "rank"], na_position="last", kind="stable")
    return frame[COLUMNS].reset_index(drop=True)


def role_position(role: str) -> int:
    """Where a role's panel comes: the fixed roles, then [K]'s classes in their order, then causal importance."""
    if role in ROLE_ORDER:
        return 100 * ROLE_ORDER.index(role)
    if role.startswith("pattern:"):
        classes = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block")
        name = role.split(":", 1)[1]
        return 100 * len(ROLE_ORDER) + (classes.index(name) if name in classes else len(classes))
    return 100 * (len(ROLE_ORDER) + 1)


def _stack(frames: list[pd.DataFrame], like: pd.DataFrame | None = None) -> pd.DataFrame:
    frames = [frame for frame in frames if not frame.empty]
    if frames:
        return pd.concat(frames, ignore_index=True)
    return like.iloc[0:0] if like is not None else pd.DataFrame(columns=ROLE_COLUMNS)


def role_frames(read: Mapping[str, pd.DataFrame], features: Mapping[tuple[str, str, str], pd.DataFrame], *,
                treebank: str, select_split: str, score_split: str,
                relations: Sequence[str] | None = None) -> pd.DataFrame:
    """Every role's rows (ROLE_COLUMNS) from the study tables read (name -> table of ATLAS_INPUTS) and the pattern
    features."""
    frames = []
    if HEAD_DIAGNOSTICS in read:
        frames.append(diagnostic_roles(read[HEAD_DIAGNOSTICS]))
    if DEPENDENCY_BEST in read:
        frames.append(dependency_roles(read[DEPENDENCY_BEST], read.get(DEPENDENCY_HEADS), treebank=treebank,
                                       select_split=select_split, score_split=score_split))
    if DEPENDENCY_HEADS in read:
        frames.append(dependency_accuracy_roles(read[DEPENDENCY_HEADS], treebank=treebank, score_split=score_split,
                                                relations=relations))
    if COREF_BEST in read:
        frames.append(coreference_roles(read[COREF_BEST], read.get(COREF_HEADS)))
    if COREF_HEADS in read:
        frames.append(coreference_accuracy_roles(read[COREF_HEADS]))
    frames += pattern_frames(features)
    if HEAD_DISABLING in read:
        frames.append(disabling_roles(read[HEAD_DISABLING]))
    return _stack(frames)


def atlas_table(models: str | Path, output: str | Path, *, family_of: Callable[[str | None], str],
                tables: Mapping[str, str | Path | None], patterns: Sequence[tuple[str, str, str, str | Path]] = (),
                parameters: Mapping[str, int | None] | None = None, revisions: Mapping[str, Sequence] | None = None,
                treebank: str, select_split: str, score_split: str,
                relations: Sequence[str] | None = None) -> pd.DataFrame:
    """Write tables/atlas.csv (atlas_halves.atlas_tables writes it with its halves). ``tables``: name -> path of the
    study tables it reads (ATLAS_INPUTS), None or absent where the study has none; ``patterns``: (model, checkpoint,
    task, pattern_features.parquet): pretrained, fine-tuned and random (the control)."""
    read = {name: read_csv(path) for name, path in tables.items() if path is not None}
    roles = role_frames(read, read_pattern_features(patterns), treebank=treebank, select_split=select_split,
                        score_split=score_split, relations=relations)
    frame = assemble(roles, model_info(read_csv(models), family_of, parameters or {}, revisions or {}))
    write_csv(frame, output)
    return frame
