"""The explorer's index (``explorer/_index.html``): the study's atlas page. A role selector over the roles of
tables/atlas.csv; one row per model (grouped by family, ordered by size, a series' revisions under it by step), every
head a mark at its place in its layer's slice of relative depth, coloured by score; a click opens the model's explorer
page on that head with the role's measure selected (atlas_page.py says how); the role agreement of related models
(tables/role_agreement.csv) beside it where the study has it; and every model of the study linked to its page,
described by the models table. Built as the explorer pages are (page.py): atlas.html, atlas.css and atlas.js inlined,
the data as inert JSON, a policy that lets only the page's own script and style apply and loads nothing."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.io import atomic_path, read_csv
from .atlas_page import atlas_data
from .page import render

COLUMNS = (("model_type", "type"), ("num_layers", "layers"), ("num_heads", "heads per layer"),
           ("hidden_size", "width"), ("vocab_size", "vocabulary"), ("source", "source"), ("revision", "revision"))


def index_page(models: Sequence[str], pages: Sequence[str | Path], models_table: str | Path | None,
               output: str | Path, *, atlas: str | Path | None = None, agreement: str | Path | None = None,
               treebank: str | None = None) -> None:
    """Write the atlas page: ``models`` in study order, each linked to its page in ``pages`` (same order) and
    described by its row of the models table where there is one (a model's MODEL@SIGNAL subjects share its row);
    the atlas of ``atlas`` (tables/atlas.csv; None: the study has none) and the role agreement of ``agreement``
    (tables/role_agreement.csv; None: the study has none); ``treebank``: the atlas's dependency treebank."""
    if len(models) != len(pages):
        raise ValueError(f"{len(models)} models but {len(pages)} pages: the rule gives one page per model")
    table = read_csv(models_table) if models_table and Path(models_table).exists() else pd.DataFrame()
    described = table.set_index(table["name"].astype(str)).to_dict("index") if "name" in table else {}
    files = {model: Path(page).name for model, page in zip(models, pages)}
    heads = {name: int(row["num_heads"]) for name, row in described.items()
             if "num_heads" in row and pd.notna(row["num_heads"])}
    data = atlas_data(atlas, heads, files, agreement=agreement, treebank=treebank)
    count = f"{len(models)} page" + ("s" if len(models) != 1 else "")
    text = render("atlas", data, "Attention atlas: the study's heads across models",
                  {"MODELS": models_table_html(models, files, described), "COUNT": count})
    with atomic_path(output) as tmp:
        tmp.write_text(text, encoding="utf-8")


def models_table_html(models: Sequence[str], files: dict[str, str], described: dict[str, dict]) -> str:
    """Every model linked to its page, with its row of the models table (escaped text only)."""
    head = "".join(f"<th>{label}</th>" for _, label in (("name", "model"), *COLUMNS))
    body = []
    for model in models:
        row = described.get(model.split("@")[0], {})
        cells = "".join(f"<td>{html.escape(_text(row.get(column)))}</td>" for column, _ in COLUMNS)
        link = html.escape(files[model], quote=True)
        body.append(f'<tr><td><a href="{link}">{html.escape(model)}</a></td>{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
