"""The role agreement figure (docs/report.md): per pair of related subjects and role, Spearman's rho of the heads'
scores with its bootstrap interval (left), and the overlap of the top heads and the share of role heads kept
(right), from tables/role_agreement.csv; Wu et al. 2025's published base-vs-variant correlations are drawn beside
rho as the reference they are (another role, retrieval heads, on other models). Rows with a note and no numbers are
counted in the title, never drawn as zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv

MAX_ROWS = 80  # beyond this the figure is unreadable; the table has every row
REFERENCE_COLUMNS = ("paper", "item", "value", "unit", "source")
RELATION_COLOURS = {"pretrained_vs_finetuned": "tab:blue", "finetune_seeds": "tab:orange",
                    "revision_next": "tab:green", "revision_last": "tab:olive", "attention_vs_signal": "tab:purple"}


def read_reference(path: str | Path) -> pd.DataFrame:
    """The published correlations, in the columns of report/paper_values/ (paper, item, value, unit, source)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [column for column in REFERENCE_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing} are missing; it needs {', '.join(REFERENCE_COLUMNS)} "
                         "(docs/report.md, Role agreement)")
    return frame.assign(number=pd.to_numeric(frame["value"], errors="coerce"))


def row_label(row: pd.Series) -> str:
    def subject(model: str, checkpoint: str) -> str:
        return model if checkpoint == "pretrained" else f"{model} {checkpoint}"

    detail = f" ({row['detail']})" if isinstance(row["detail"], str) and row["detail"] else ""
    return literal_text(f"{subject(row['first_model'], row['first_checkpoint'])} -> "
                        f"{subject(row['second_model'], row['second_checkpoint'])}: {row['role']}{detail}")


def draw_role_agreement(table: str | Path, reference: str | Path, png: str | Path, pdf: str | Path) -> None:
    """Draw the figure from tables/role_agreement.csv and the published reference values."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
    compared = frame[frame["heads"].notna()].reset_index(drop=True)
    notes = len(frame) - len(compared)
    shown = compared.head(MAX_ROWS)
    height = 1.8 + 0.22 * max(len(shown), 4)
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, height), sharey=True, constrained_layout=True,
                                         gridspec_kw={"width_ratios": [3, 2]})
    y = np.arange(len(shown))
    colours = [RELATION_COLOURS.get(str(relation), "tab:gray") for relation in shown["relation"]]
    rho = shown["rho"].astype(float)
    has_interval = shown["rho_low"].notna() & shown["rho_high"].notna()
    left.errorbar(rho[has_interval], y[has_interval.to_numpy()],
                  xerr=[(rho - shown["rho_low"].astype(float))[has_interval],
                        (shown["rho_high"].astype(float) - rho)[has_interval]],
                  fmt="none", ecolor="gray", elinewidth=1, capsize=2)
    left.scatter(rho, y, c=colours, s=22, zorder=3)
    published = read_reference(reference).dropna(subset=["number"])
    for number in published["number"]:
        left.axvline(number, color="black", linestyle=":", linewidth=0.8)
    if len(published):
        values = "; ".join(f"{item} {number:g}" for item, number in zip(published["item"], published["number"],
                                                                        strict=True))
        left.plot([], [], color="black", linestyle=":", linewidth=0.8,
                  label=literal_text(f"{published['paper'].iloc[0]} (another role, other models, "
                                     f"{published['unit'].iloc[0]}): {values}"))
        left.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12 * 4 / max(len(shown), 4) - 0.1),
                    frameon=False)
    left.set(xlim=(-1.05, 1.05), xlabel="Spearman's rho of the heads' scores (95% bootstrap interval over heads)",
             title="rank agreement (dotted: published reference)")
    right.scatter(shown["jaccard_top"].astype(float), y, marker="o", facecolors="none", edgecolors=colours, s=30,
                  label="Jaccard overlap of the top heads")
    right.scatter(shown["kept_share"].astype(float), y, marker="x", c=colours, s=26,
                  label="share of the first subject's role heads kept")
    right.set(xlim=(-0.05, 1.05), xlabel="share", title="top heads and role heads")
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 * 4 / max(len(shown), 4) - 0.1),
                 frameon=False)
    for ax in (left, right):
        ax.title.set_fontsize(9)
        ax.grid(axis="x", alpha=0.3)
    left.set_yticks(y, [row_label(row) for _, row in shown.iterrows()], fontsize=7)
    left.set_ylim(len(shown) - 0.5 if len(shown) else 0.5, -1.5)
    if not len(shown):
        left.text(0, 0, "no role measured on both subjects of a related pair", ha="center", fontsize=9)
    more = f"; the first {MAX_ROWS} of {len(compared)} compared rows" if len(compared) > MAX_ROWS else ""
    figure.suptitle(f"How far each role holds between related subjects ({notes} pair(s) or role(s) not comparable: "
                    f"see the table's note column{more})", fontsize=10)
    save_figure(figure, png, pdf)
