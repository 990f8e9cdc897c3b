"""The explorer's index (``explorer/_index.html``): every model of the study, one row each, with a link to its head
explorer page and what the models table says of it (type, layers x heads, width, vocabulary), so that a study of
many models is browsed from one page. Static HTML, no script: the policy forbids everything but its own style."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.io import atomic_path

COLUMNS = (("model_type", "type"), ("num_layers", "layers"), ("num_heads", "heads per layer"),
           ("hidden_size", "width"), ("vocab_size", "vocabulary"), ("source", "source"), ("revision", "revision"))
STYLE = ("body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}th{background:#f4f4f4}")


def index_page(models: Sequence[str], pages: Sequence[str | Path], models_table: str | Path | None,
               output: str | Path) -> None:
    """Write the index: ``models`` in study order, each linked to its page in ``pages`` (same order), described by
    its row of the models table where there is one (a model's MODEL@SIGNAL subjects share its row)."""
    if len(models) != len(pages):
        raise ValueError(f"{len(models)} models but {len(pages)} pages: the rule gives one page per model")
    table = pd.read_csv(models_table) if models_table and Path(models_table).exists() else pd.DataFrame()
    rows = table.set_index("name").to_dict("index") if "name" in table else {}
    head = "".join(f"<th>{label}</th>" for _, label in (("name", "model"), *COLUMNS))
    body = []
    for model, page in zip(models, pages):
        described = rows.get(model.split("@")[0], {})
        cells = "".join(f"<td>{html.escape(_text(described.get(column)))}</td>" for column, _ in COLUMNS)
        link = html.escape(Path(page).name, quote=True)
        body.append(f'<tr><td><a href="{link}">{html.escape(model)}</a></td>{cells}</tr>')
    policy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    text = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}"><title>Head explorer: the study\'s '
            f"models</title><style>{STYLE}</style></head><body><h1>Head explorer: {len(models)} models</h1>"
            "<p>Each model's page shows every head's measures, its maps on example inputs and its fine-tuning "
            "effects; the cross-model table of the report (tables/atlas.csv) places the heads of all of them by "
            f"relative depth.</p><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            "</body></html>\n")
    with atomic_path(output) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
