"""The role agreement figure (docs/roles.md): per kind of pair (pretrained vs fine-tuned, seeds, revisions, signals) a
panel with one line per role, each pair's Spearman rho with its bootstrap interval as a mark coloured by the pair
(the task's checkpoint), the first subject's split-half floor behind it as a grey bar, the mark's shape its verdict,
and Wu et al. 2025's published base-vs-variant band; under the panels, one sentence per fine-tuned checkpoint saying
which roles moved beyond their floor (and which were kept, or could not be measured). Rows with a note and no numbers
are counted in the title, never drawn as zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv

MAX_ROWS = 60  # role lines per panel; the table has every row
REFERENCE_COLUMNS = ("paper", "item", "value", "unit", "source")
RELATION_TITLES = {"pretrained_vs_finetuned": "pretrained vs fine-tuned", "finetune_seeds": "seed vs seed",
                   "revision_next": "revision vs the next", "revision_last": "revision vs the last",
                   "attention_vs_signal": "attention vs signal"}
VERDICT_MARKERS = {"moved": "X", "kept": "o", "noisy": "s", "same weights": "D", "": "."}
PAIR_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
                "tab:cyan", "tab:gray")


def read_reference(path: str | Path) -> pd.DataFrame:
    """The published correlations, in the columns of report/paper_values/ (paper, item, value, unit, source)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [column for column in REFERENCE_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing} are missing; it needs {', '.join(REFERENCE_COLUMNS)} "
                         "(docs/report.md, Role agreement)")
    return frame.assign(number=pd.to_numeric(frame["value"], errors="coerce"))


def subject(model: str, checkpoint: str) -> str:
    return model if checkpoint == "pretrained" else f"{model} {checkpoint}"


def role_label(role: str, detail: object) -> str:
    return f"{role} ({detail})" if isinstance(detail, str) and detail else role


def pair_label(row: pd.Series) -> str:
    first = subject(row["first_model"], row["first_checkpoint"])
    return f"{first} -> {subject(row['second_model'], row['second_checkpoint'])}"


def verdict_sentences(frame: pd.DataFrame) -> list[str]:
    """One sentence per pretrained-vs-fine-tuned pair: the roles that moved beyond their floor, then how many were
    kept and which could not be measured."""
    sentences = []
    rows = frame[(frame["relation"] == "pretrained_vs_finetuned") & frame["heads"].notna()]
    for label, pair in rows.groupby(rows.apply(pair_label, axis=1), sort=False):
        verdicts = [str(v) if isinstance(v, str) else "" for v in pair["verdict"]]
        names = {v: [role_label(r, d) for r, d, w in zip(pair["role"], pair["detail"], verdicts) if w == v]
                 for v in ("moved", "kept", "noisy", "same weights", "")}
        moved = ", ".join(names["moved"]) if names["moved"] else "no role"
        parts = [f"{label}: {moved} moved beyond its floor", f"{len(names['kept'])} kept"]
        if names["noisy"]:
            parts.append(f"{len(names['noisy'])} too noisy to tell ({', '.join(names['noisy'][:6])}"
                         + (", ..." if len(names["noisy"]) > 6 else "") + ")")
        if names["same weights"]:
            parts.append("the two hold the same weights")
        if names[""]:
            parts.append(f"{len(names[''])} without a floor")
        sentences.append("; ".join(parts) + ".")
    return sentences


def _panel(ax, rows: pd.DataFrame, published: pd.DataFrame) -> None:
    """One relation's roles, each a line: its floor as a grey bar, each pair's rho with its interval."""
    roles = list(dict.fromkeys(role_label(r, d) for r, d in zip(rows["role"], rows["detail"])))[:MAX_ROWS]
    pairs = list(dict.fromkeys(rows.apply(pair_label, axis=1)))
    colour = {label: PAIR_COLOURS[i % len(PAIR_COLOURS)] for i, label in enumerate(pairs)}
    band = published[published["number"] > 0.5]["number"]
    if len(band):
        ax.axvspan(band.min(), band.max(), color="gold", alpha=0.25, linewidth=0,
                   label=literal_text(f"{published['paper'].iloc[0]}: base vs variant, {band.min():g}-{band.max():g} "
                                      f"({published['unit'].iloc[0]}, another role and models)"))
    offsets = np.linspace(-0.25, 0.25, len(pairs)) if len(pairs) > 1 else np.zeros(1)
    floors_drawn = set()
    for _, row in rows.iterrows():
        name = role_label(row["role"], row["detail"])
        if name not in roles:
            continue
        y = roles.index(name)
        floor = (name, row["first_model"], row["first_checkpoint"])
        if pd.notna(row["floor_low"]) and floor not in floors_drawn:
            floors_drawn.add(floor)
            ax.plot([row["floor_low"], row["floor_high"]], [y, y], color="0.7", linewidth=6, solid_capstyle="butt",
                    zorder=1, label="split-half floor (Spearman-Brown), 95%" if len(floors_drawn) == 1 else None)
        label = pair_label(row)
        y_pair = y + offsets[pairs.index(label)]
        if pd.notna(row["rho_low"]):
            ax.plot([row["rho_low"], row["rho_high"]], [y_pair, y_pair], color=colour[label], linewidth=1, zorder=2)
        verdict = row["verdict"] if isinstance(row["verdict"], str) else ""
        ax.scatter([row["rho"]], [y_pair], color=colour[label], marker=VERDICT_MARKERS.get(verdict, "."), s=26,
                   zorder=3)
    for label in pairs:
        ax.plot([], [], color=colour[label], linewidth=1, marker="o", markersize=4, label=literal_text(label))
    for verdict, marker in VERDICT_MARKERS.items():
        if verdict and (rows["verdict"] == verdict).any():
            ax.scatter([], [], color="black", marker=marker, s=20, label=verdict)
    ax.set_yticks(range(len(roles)), [literal_text(r) for r in roles], fontsize=7)
    ax.set_ylim(len(roles) - 0.5 if roles else 0.5, -0.5)
    ax.set_xlim(-1.05, 1.05)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def draw_role_agreement(table: str | Path, reference: str | Path, png: str | Path, pdf: str | Path) -> None:
    """Draw the figure from tables/role_agreement.csv and the published reference values."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
    compared = frame[frame["heads"].notna() & frame["rho"].notna()].reset_index(drop=True)
    notes = int(frame["heads"].isna().sum())
    relations = [r for r in RELATION_TITLES if (compared["relation"] == r).any()]
    published = read_reference(reference).dropna(subset=["number"])
    sentences = verdict_sentences(frame)
    heights = [max(2.0, 0.2 * min(MAX_ROWS, compared[compared["relation"] == r][["role", "detail"]]
                                  .drop_duplicates().shape[0]) + 0.8) for r in relations] or [2.0]
    text_height = 0.3 + 0.16 * len(sentences)  # a row of its own for the sentences, under the panels
    figure, axes = plt.subplots(len(heights) + 1, 1, figsize=(12, sum(heights) + text_height + 0.8), squeeze=False,
                                gridspec_kw={"height_ratios": [*heights, text_height]}, constrained_layout=True)
    panels, words = axes[:-1, 0], axes[-1, 0]
    for ax, relation in zip(panels, relations):
        _panel(ax, compared[compared["relation"] == relation], published)
        ax.set_title(RELATION_TITLES[relation], fontsize=9)
    panels[-1].set_xlabel("Spearman's rho of the heads' scores (95% bootstrap interval over heads); grey: the first "
                          "subject's split-half floor; mark: the verdict")
    if not relations:
        panels[0].text(0, 0, "no role measured on both subjects of a related pair", ha="center", fontsize=9)
        panels[0].set_xlim(-1, 1)
    words.axis("off")
    words.text(0, 1, literal_text("\n".join(sentences)), fontsize=7, va="top", ha="left", wrap=True,
               transform=words.transAxes)
    figure.suptitle(f"How far each role holds between related subjects ({notes} pair(s) or role(s) not comparable: "
                    "see the table's note column)", fontsize=10)
    save_figure(figure, png, pdf)
