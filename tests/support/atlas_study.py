"""A synthetic tables/atlas.csv (and models.csv, role_agreement.csv) for the atlas page's and figure's tests.

Every score is known by construction (:func:`atlas_score`), so that a test can say which mark must be drawn where
and what its hover must say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ATLAS_COLUMNS = ["model", "family", "parameters", "series", "revision", "step", "checkpoint", "role", "detail",
                 "layer", "num_layers", "relative_depth", "head", "score", "ci_low", "ci_high", "random_score", "rank"]
AGREEMENT_COLUMNS = ["relation", "role", "detail", "first_model", "first_checkpoint", "second_model",
                     "second_checkpoint", "heads", "rho", "rho_low", "rho_high", "top_heads", "jaccard_top",
                     "role_heads", "kept_share", "note", "role_rule", "lost_heads"]
RELATIONS = ("nsubj", "det", "amod", "obj", "all")
FINETUNED = "cola.seed42.final"
DETAILS = {"sink": "natural", "previous_token": "natural", "induction": "random_repeated"}  # how each was measured


@dataclass(frozen=True)
class AtlasModel:
    name: str
    family: str
    parameters: int | None
    layers: int
    heads: int
    series: str | None = None
    revision: str | None = None
    step: int | None = None


def atlas_score(model: int, role: str, layer: int, head: int, heads: int) -> float:
    """A distinct score in [0, 1) per model, role and head."""
    salt = {"sink": 0, "induction": 17, "dependency": 31, "previous_token": 43}.get(role, 53)
    return round(((layer * heads + head) * 37 + model * 11 + salt) % 997 / 997, 4)


def zoo(count: int = 25) -> list[AtlasModel]:
    """``count`` models of four families: 12 x 12 encoders, 24 x 16 and 32 x 32 (1,024 heads) decoders, and a
    series of revisions of a 12 x 12 decoder (steps 1000, 2000, ...)."""
    models = []
    for k in range(count):
        kind = k % 4
        if kind == 0:
            models.append(AtlasModel(f"enc-{k}", "bert", 110_000_000 + k, 12, 12))
        elif kind == 1:
            models.append(AtlasModel(f"dec-{k}", "gpt2", 350_000_000 + k, 24, 16))
        elif kind == 2:
            models.append(AtlasModel(f"big-{k}", "llama", 7_000_000_000 + k, 32, 32))
        else:
            step = 1000 * (k // 4 + 1)
            models.append(AtlasModel(f"rev-step{step}", "gpt_neox", 160_000_000, 12, 12, "rev", f"step{step}", step))
    return models


def atlas_frame(models: list[AtlasModel], roles: tuple[str, ...] = ("sink", "induction", "dependency"),
                finetuned: tuple[str, ...] = ()) -> pd.DataFrame:
    """Rows as workflow_scripts/report/atlas.py writes them: every head of per-head roles, each relation's best head
    of ``dependency`` (the highest :func:`atlas_score` of the relation's own scores); the models of ``finetuned``
    have their sink and induction heads on the fine-tuned checkpoint ``FINETUNED`` too (scores of model index + 100)."""
    frames = []
    for index, m in enumerate(models):
        layer, head = np.divmod(np.arange(m.layers * m.heads), m.heads)
        base = {"model": m.name, "family": m.family, "parameters": m.parameters, "series": m.series or m.name,
                "revision": m.revision, "step": m.step, "checkpoint": "pretrained", "num_layers": m.layers}
        for role in roles:
            scores = np.array([atlas_score(index, role, int(at), int(h), m.heads) for at, h in zip(layer, head)])
            if role == "dependency":
                for r, relation in enumerate(RELATIONS):
                    shifted = np.roll(scores, 7 * r + 1)
                    best = int(np.argmax(shifted))
                    frames.append(pd.DataFrame({**base, "role": role, "detail": relation, "layer": [layer[best]],
                                                "head": [head[best]], "score": [shifted[best]], "rank": [1]}))
                continue
            rank = pd.Series(scores).rank(ascending=False, method="first").astype(int).to_numpy()
            frames.append(pd.DataFrame({**base, "role": role, "detail": DETAILS[role], "layer": layer, "head": head,
                                        "score": scores, "rank": rank}))
            if m.name in finetuned:
                tuned = np.array([atlas_score(index + 100, role, int(at), int(h), m.heads)
                                  for at, h in zip(layer, head)])
                rank = pd.Series(tuned).rank(ascending=False, method="first").astype(int).to_numpy()
                frames.append(pd.DataFrame({**base, "checkpoint": FINETUNED, "role": role, "detail": DETAILS[role],
                                            "layer": layer, "head": head, "score": tuned, "rank": rank}))
    frame = pd.concat(frames, ignore_index=True)
    frame["relative_depth"] = (frame["layer"] + 0.5) / frame["num_layers"]
    frame["ci_low"], frame["ci_high"] = frame["score"] - 0.01, frame["score"] + 0.01
    frame["random_score"] = (frame["score"] / 10).round(4)
    return frame[ATLAS_COLUMNS]


def write_atlas_study(root: Path, models: list[AtlasModel], *, roles: tuple[str, ...] = ("sink", "induction",
                      "dependency"), agreement: bool = True, finetuned: tuple[str, ...] = ()) -> dict[str, Path]:
    """atlas.csv, models.csv and (``agreement``) role_agreement.csv under ``root``: their paths by table name.
    The agreement: each revision of a series against the next (sink and induction), a pair of different shapes
    left out (a note for every role), and each model of ``finetuned`` against its fine-tuned checkpoint (sink)."""
    root.mkdir(parents=True, exist_ok=True)
    paths = {"atlas": root / "atlas.csv", "models": root / "models.csv"}
    atlas_frame(models, roles, finetuned).to_csv(paths["atlas"], index=False)
    pd.DataFrame({"name": [m.name for m in models], "model_type": [m.family for m in models],
                  "num_layers": [m.layers for m in models], "num_heads": [m.heads for m in models]}
                 ).to_csv(paths["models"], index=False)
    if agreement:
        series = [m for m in models if m.series]
        rows = [{"relation": "revision_next", "role": role, "detail": DETAILS[role],
                 "first_model": first.name, "first_checkpoint": "pretrained", "second_model": second.name,
                 "second_checkpoint": "pretrained", "heads": first.layers * first.heads, "rho": 0.9 - 0.1 * k,
                 "rho_low": 0.85 - 0.1 * k, "rho_high": 0.95 - 0.1 * k, "top_heads": 7, "jaccard_top": 0.5,
                 "role_heads": 10, "kept_share": 0.8, "note": ""}
                for role in ("sink", "induction") for k, (first, second) in enumerate(zip(series, series[1:]))]
        # A pair of different shapes: left out, with a note for every role (no role), the first revision against the
        # first model.
        left_out = {"relation": "finetuned", "role": None, "detail": None,
                    "first_model": (series or models)[0].name, "first_checkpoint": "pretrained",
                    "second_model": models[0].name, "second_checkpoint": "pretrained",
                    "note": "different shapes: left out"}
        rows.append(left_out)
        rows += [{"relation": "finetuned", "role": "sink", "detail": DETAILS["sink"], "first_model": name,
                  "first_checkpoint": "pretrained", "second_model": name, "second_checkpoint": FINETUNED, "heads": 144,
                  "rho": 0.5, "rho_low": 0.4, "rho_high": 0.6, "top_heads": 7, "jaccard_top": 0.25,
                  "role_heads": 3, "kept_share": 0.333, "note": "", "role_rule": "top heads",
                  "lost_heads": "0:1 2:3"} for name in finetuned]
        paths["role_agreement"] = root / "role_agreement.csv"
        pd.DataFrame(rows, columns=AGREEMENT_COLUMNS).to_csv(paths["role_agreement"], index=False)
    return paths
