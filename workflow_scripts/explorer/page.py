"""The head explorer page: one self-contained HTML file per model (no server, no external URL).

The page is page.html with page.css and page.js inlined and the data (:func:`explorer_data`) in a
``<script type="application/json">`` block (:func:`render`, which builds the atlas page of index.py the same way).
Text from the data never reaches the HTML as markup:

* the JSON is written with ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\uXXXX`` escapes, so no token can close
  the block (``</script>``) or open a comment, and the browser's JSON.parse gives the text back unchanged;
* the script puts text in the page with textContent and setAttribute only;
* a Content-Security-Policy lets only the page's own script run (its SHA-256) and nothing load from
  anywhere, so even markup that got through could run nothing. Inside ``snakemake --report`` the page is
  an iframe of its own (a data: URI) and keeps this policy.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import logging
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.io import atomic_path, read_csv
from ..core.table_names import (
    ATTENTION_DISTANCE,
    COREF_HEADS,
    DEPENDENCY_HEADS,
    FINETUNE_CHANGE,
    HEAD_CLUSTERS,
    HEAD_DIAGNOSTICS,
    LEXICAL_HEADS,
    MODELS,
    SURFACE_HEADS,
)
from ..models.shape import ModelShape
from .example_maps import example_maps
from .head_tables import (
    PRETRAINED,
    RANDOM,
    change_section,
    cluster_section,
    coreference_section,
    declared_measures,
    dependency_section,
    is_decoder,
    lexical_section,
    models_table_shape,
    pattern_section,
    surface_section,
)

log = logging.getLogger(__name__)

SIGNAL = "attention"  # the only signal today; another (e.g. attention x value norms) adds a key beside it
SECTION_ORDER = ("surface", "dependency", "coreference", "cluster", "patterns", "change", "lexical")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_PLACEHOLDER = re.compile(r"\{\{([A-Z]+)\}\}")
# The grid measures a decoder's page opens on, the first the study has: attention to the first token (its sink) on the
# surface corpus, then on random tokens (study/plans/surface.py declares both).
DECODER_DEFAULTS = ("measure.first_token.first_token", f"measure.{HEAD_DIAGNOSTICS}.first_token.random")


def embed_json(data: Any) -> str:
    """``data`` as JSON that is inert inside a ``<script>`` element and parses back to ``data``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group(0)], text)


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render_page(data: Mapping[str, Any], title: str) -> str:
    """The page's HTML: the template with its style, script and ``data`` inlined, and the policy."""
    return render("page", data, title)


def render(name: str, data: Mapping[str, Any], title: str, extra: Mapping[str, str] | None = None) -> str:
    """``NAME.html`` with ``NAME.css``, ``NAME.js`` and ``data`` inlined, under a policy that lets only that script
    and that style apply and loads nothing. ``extra``: markup (already escaped) for the template's other
    ``{{PLACEHOLDERS}}``."""
    style, script = _asset(f"{name}.css"), _asset(f"{name}.js")
    for asset, text in ((f"{name}.css", style), (f"{name}.js", script)):
        if "</" in text:  # would end the <style>/<script> element early
            raise ValueError(f"{asset} must not contain '</'")
    # Nothing is loaded from anywhere (default-src 'none'); only this script and this style apply.
    policy = (f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
              "base-uri 'none'; form-action 'none'")
    # Every page's head (head.html): the one place of the policy, the title and the style.
    head_parts = {"CSP": policy, "TITLE": html.escape(title), "STYLE": style}
    head = _PLACEHOLDER.sub(lambda m: head_parts[m.group(1)], _asset("head.html"))
    parts = {**(extra or {}), "HEAD": head, "DATA": embed_json(data), "SCRIPT": script}
    # One pass: text put in is never searched for placeholders again.
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _asset(f"{name}.html"))


def default_measure(measures: Sequence[Mapping[str, Any]], decoder: bool) -> str | None:
    """The id of the measure the page opens on. A decoder's: its attention to the first token ([CLS], the grid's
    first measure, is 0 in every cell of a model without one). Otherwise, or where the study has neither, the
    first measure with a value in some cell (non-zero for a number); failing that, the first measure."""
    ids = [m["id"] for m in measures]
    for wanted in DECODER_DEFAULTS if decoder else ():
        if wanted in ids:
            return wanted
    shown = next((m["id"] for m in measures
                  if any(v is not None and (m["kind"] == "category" or v != 0) for v in m["values"])), None)
    return shown or (ids[0] if ids else None)


def explorer_data(model: str, tables: Mapping[str, str | Path | None], *,
                  pattern_parts: Sequence[tuple[str, str, str | Path]], relations: Sequence[str],
                  select_split: str, examples: Mapping[str, Any],
                  head_measures: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Everything the page shows about ``model``.

    ``tables``: study table name -> path (None or absent: the study has no such table; ``models`` is needed);
    ``pattern_parts``: (checkpoint, task, pattern_features.parquet) of the pattern classes to show;
    ``examples``: the example maps (:func:`workflow_scripts.explorer.example_maps.example_maps`);
    ``head_measures``: the declared per-head columns that colour the grid too (study/plans/declarations.py).
    """
    shape = models_table_shape(tables[MODELS], model)
    measures: list[dict] = []
    sections: dict[str, Any] = {}
    built = {
        "surface": surface_section(tables.get(SURFACE_HEADS), tables.get(ATTENTION_DISTANCE), model, shape),
        "dependency": dependency_section(tables.get(DEPENDENCY_HEADS), model, shape, relations=relations,
                                         select_split=select_split),
        "coreference": coreference_section(tables.get(COREF_HEADS), model, shape),
        "cluster": cluster_section(tables.get(HEAD_CLUSTERS), model, shape),
        "change": change_section(tables.get(FINETUNE_CHANGE), model, shape),
        "patterns": pattern_section(pattern_parts, shape),
    }
    # Grid order: surface, syntax, clusters, then change and pattern classes per task.
    for name in ("surface", "dependency", "coreference", "cluster", "change", "patterns"):
        found, section = built[name]
        measures += found
        if section is not None:
            sections[name] = section
        if name == "surface":
            measures += declared_measures(head_measures, tables, model, shape)
    measures += checkpoint_measures(tables, model, shape, relations=relations, select_split=select_split,
                                    head_measures=head_measures)
    lexical_checkpoints: dict[str, list[str]] = {}
    for checkpoint, task, _ in pattern_parts:
        lexical_checkpoints.setdefault(task, []).append(checkpoint)
    lexical = lexical_section(tables.get(LEXICAL_HEADS), model, shape, lexical_checkpoints)
    if lexical is not None:
        sections["lexical"] = lexical
    absent = [name for name in SECTION_ORDER if name not in sections]
    notes = [f"Not in this study: {', '.join(absent)}."] if absent else []
    if examples.get("note"):  # configured example ids that a limited corpus does not hold (example_maps.py)
        notes.append(str(examples["note"]))
    notes.append("Layers and heads are numbered from 1.")
    return {
        "model": model, "layers": shape.layers, "heads": shape.heads,
        "summary": f"{shape.layers} layers x {shape.heads} heads; {len(measures)} per-head measures; "
                   f"{len(examples.get('sentences', []))} example inputs",
        "signal_order": [SIGNAL],
        "signals": {SIGNAL: {"label": "attention weights", "measures": measures, "sections": sections,
                             "default_measure": default_measure(measures, is_decoder(tables[MODELS], model))}},
        "section_order": list(SECTION_ORDER), "examples": dict(examples), "notes": notes,
    }


# The tables that hold a fine-tuned checkpoint's per-head measures (roles.finetuned, docs/roles.md).
CHECKPOINT_TABLES = (HEAD_DIAGNOSTICS, SURFACE_HEADS, DEPENDENCY_HEADS, COREF_HEADS)


def measured_checkpoints(tables: Mapping[str, str | Path | None], model: str) -> list[str]:
    """The fine-tuned checkpoints of ``model`` the study measures heads on, in the order the tables first name them."""
    found: dict[str, None] = {}
    for name in CHECKPOINT_TABLES:
        if tables.get(name) is None or not Path(tables[name]).exists():
            continue
        rows = read_csv(tables[name])
        found.update(dict.fromkeys(rows.loc[rows["model"].astype(str) == model, "checkpoint"].astype(str)))
    return [c for c in found if c not in (PRETRAINED, RANDOM)]


def checkpoint_measures(tables: Mapping[str, str | Path | None], model: str, shape: ModelShape, *,
                        relations: Sequence[str], select_split: str,
                        head_measures: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The grid measures of each fine-tuned checkpoint the study measures heads on: the pretrained checkpoint's
    surface, head-measure, dependency and coreference measures, of that checkpoint (``ID@CHECKPOINT``), a group per
    checkpoint after the pretrained measures; the atlas page opens them for a head of that checkpoint."""
    found = []
    for checkpoint in measured_checkpoints(tables, model):
        of_checkpoint = [
            *surface_section(tables.get(SURFACE_HEADS), tables.get(ATTENTION_DISTANCE), model, shape,
                             checkpoint)[0],
            *declared_measures(head_measures, tables, model, shape, checkpoint),
            *dependency_section(tables.get(DEPENDENCY_HEADS), model, shape, relations=relations,
                                select_split=select_split, checkpoint=checkpoint)[0],
            *coreference_section(tables.get(COREF_HEADS), model, shape, checkpoint)[0]]
        for measure in of_checkpoint:
            measure.update(group=f"checkpoint {checkpoint}", label=f"{measure['label']} ({checkpoint})")
        found += of_checkpoint
    return found


def head_explorer(model: str, tables: Mapping[str, str | Path | None], output: str | Path, *,
                  pattern_parts: Sequence[tuple[str, str, str | Path]], relations: Sequence[str], select_split: str,
                  example_dumps: Sequence[tuple[str, str, str | Path]], example_tokens: str | Path | None,
                  corpus: str | None, split: str | None, examples: int, max_tokens: int,
                  example_ids: Sequence[int] | None, max_megabytes: float,
                  head_measures: Sequence[Mapping[str, Any]] = ()) -> int:
    """Write the explorer page of ``model`` to ``output``; return its size in bytes.

    ``example_dumps``: (checkpoint, label, dump directory) whose maps are drawn side by side, on the examples
    of ``example_tokens`` (none: the page has no maps). Raises AtlasError when the maps alone would exceed
    ``max_megabytes``.
    """
    budget = int(max_megabytes * 1e6)
    if example_tokens is None or not example_dumps:
        maps: dict[str, Any] = {"corpus": corpus or "", "split": split or "", "levels": 255, "checkpoints": [],
                                "sentences": []}
    else:
        maps = example_maps(example_dumps, example_tokens, count=examples, max_tokens=max_tokens,
                            example_ids=example_ids, budget_bytes=budget, corpus=corpus or "", split=split or "")
    data = explorer_data(model, tables, pattern_parts=pattern_parts, relations=relations, select_split=select_split,
                         examples=maps, head_measures=head_measures)
    page = render_page(data, f"Head explorer: {model}")
    size = len(page.encode("utf-8"))
    with atomic_path(output) as tmp:
        tmp.write_text(page, encoding="utf-8")
    log.info("%s: %.2f MB (%d measures, %d example inputs)", output, size / 1e6,
             len(data["signals"][SIGNAL]["measures"]), len(maps["sentences"]))
    return size
