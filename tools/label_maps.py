#!/usr/bin/env python
"""Render attention maps for hand labelling into [K]'s five pattern classes (METHODS 8.1).

Writes a static HTML page (no server, no network: the maps are PNG data URIs) with one card per
map, a class menu per card pre-set to the rule labeller's suggestion, and a button that downloads
the labels file; plus ``labels_template.csv`` with the same maps (an empty ``class`` to fill in,
``source = human`` and the rule's guess in ``rule_suggestion``) for labelling in a spreadsheet
instead. Either result is what config ``finetune_effects.human_labels`` reads (rows with an empty
class are ignored).

    # the maps the workflow seeded its CNN with (rule labels), to check and correct by hand
    python tools/label_maps.py --results results --model all-MiniLM-L6-v2 \\
        --labels results/analysis/finetune_effects/all-MiniLM-L6-v2/pattern_labels_seed.csv --out labelling/
    # or a fresh random sample of 400 maps of some checkpoints and tasks
    python tools/label_maps.py --results results --model all-MiniLM-L6-v2 --sample 400 \\
        --checkpoints pretrained rte.seed42.final --tasks rte mrpc --out labelling/

See docs/finetune_effects.md for the labels file format.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workflow_scripts.finetune_effects.pattern_cnn import (  # noqa: E402 - as above
    LABEL_COLUMNS,
    collect_maps,
    read_labels,
)
from workflow_scripts.finetune_effects.pattern_rules import CLASSES, Thresholds  # noqa: E402 - as above


def default_thresholds() -> Thresholds:
    """The rule labeller's thresholds as the config schema sets them by default (the schema is their one source)."""
    import yaml

    schema = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    fields = schema["properties"]["finetune_effects"]["properties"]["thresholds"]["properties"]
    return Thresholds.from_mapping({name: field["default"] for name, field in fields.items()})


def dump_paths(results: Path, model: str, checkpoint: str, task: str) -> tuple[Path, Path]:
    # The dev split the study dumped for the task (its entry's dev_split): dev, or MNLI's dev_matched.
    # A task's dumps are of its dev split only (train is never dumped for it), so the one token table is it.
    dumped = sorted(p.stem for p in (results / "tokens" / model / task).glob("*.parquet"))
    split = dumped[0] if len(dumped) == 1 else "dev_matched" if "dev_matched" in dumped else "dev"
    return (results / "attention" / model / checkpoint / task / split,
            results / "tokens" / model / task / f"{split}.parquet")


def random_sample(results: Path, model: str, checkpoints: list[str], tasks: list[str], n: int,
                  seed: int) -> pd.DataFrame:
    """``n`` maps drawn uniformly over (checkpoint, task) dumps that exist, examples, layers and heads."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    pools = []
    for checkpoint in checkpoints:
        for task in tasks:
            dump, tokens = dump_paths(results, model, checkpoint, task)
            if not (dump / "manifest.json").is_file() or not tokens.is_file():
                print(f"skipped {checkpoint}/{task}: no dump at {dump}", file=sys.stderr)
                continue
            manifest = json.loads((dump / "manifest.json").read_text())
            ids = np.unique(pq.read_table(tokens, columns=["example_id"])["example_id"].to_numpy())
            pools.append((checkpoint, task, ids, int(manifest["num_layers"]), int(manifest["num_heads"])))
    if not pools:
        raise SystemExit("no dump of the given checkpoints and tasks exists; run the workflow first")
    rows, seen = [], set()
    while len(rows) < n and len(seen) < sum(len(p[2]) * p[3] * p[4] for p in pools):
        checkpoint, task, ids, layers, heads = pools[rng.integers(len(pools))]
        key = (checkpoint, task, int(rng.choice(ids)), int(rng.integers(layers)), int(rng.integers(heads)))
        if key not in seen:
            seen.add(key)
            rows.append(key)
    frame = pd.DataFrame(rows, columns=["checkpoint", "task", "example_id", "layer", "head"])
    frame["class"] = ""
    frame["source"] = "rule"
    return frame


def token_strings(tokens: Path) -> dict[int, list[str]]:
    import pyarrow.parquet as pq

    table = pq.read_table(tokens, columns=["example_id", "token"]).to_pandas()
    return {int(k): list(v) for k, v in table.groupby("example_id", sort=False)["token"]}


def render(attention: np.ndarray, tokens: list[str] | None, title: str) -> str:
    """One map as a PNG data URI (darker = more attention, as [K]'s Figure 1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(3.6, 3.6))
    ax.imshow(attention, cmap="Greys", vmin=0, vmax=max(float(attention.max()), 1e-6))
    n = attention.shape[0]
    if tokens is not None and n <= 48:
        ax.set_xticks(range(n), tokens, rotation=90, fontsize=5)
        ax.set_yticks(range(n), tokens, fontsize=5)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    ax.set_title(title, fontsize=7)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Attention maps to label</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
.grid {{ display: flex; flex-wrap: wrap; gap: 12px; }}
.card {{ border: 1px solid #ccc; padding: 6px; width: 330px; font-size: 12px; }}
.card img {{ width: 320px; }}
.done {{ background: #eef7ee; }}
</style></head><body>
<h2>Label each attention map ({n} maps of {model})</h2>
<p>Classes of Kovaleva et al. (2019): <b>Vertical</b> (attention to special tokens), <b>Diagonal</b>
(previous/next token), <b>Vertical+Diagonal</b>, <b>Block</b> (within-sentence attention on sentence
pairs), <b>Heterogeneous</b> (everything else). Each menu starts at the rule labeller's suggestion;
change it where you disagree, then download the labels file and set
<code>finetune_effects.human_labels</code> to its path. Rows are attending tokens; layers and heads are 0-based.</p>
<button onclick="download()">Download labels CSV</button> <span id="count"></span>
<div class="grid">
{cards}
</div>
<script>
const CLASSES = {classes};
function changed(select) {{ select.closest('.card').classList.add('done'); count(); }}
function count() {{
  const done = document.querySelectorAll('.card.done').length;
  document.getElementById('count').textContent = done + ' of {n} maps reviewed';
}}
function download() {{
  const rows = ['{header}'];
  for (const card of document.querySelectorAll('.card')) {{
    const d = card.dataset;
    const value = card.querySelector('select').value;
    rows.push([d.checkpoint, d.task, d.example, d.layer, d.head, value, 'human'].join(','));
  }}
  const blob = new Blob([rows.join('\\n') + '\\n'], {{type: 'text/csv'}});
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = 'human_labels.csv';
  link.click();
}}
count();
</script></body></html>
"""


def card(row: pd.Series, image: str, suggestion: str) -> str:
    options = "".join(f'<option value="{c}"{" selected" if c == suggestion else ""}>{c}'
                      f'{" (rule)" if c == suggestion else ""}</option>' for c in CLASSES)
    key = f"{row['checkpoint']} / {row['task']} / example {row['example_id']} / layer {row['layer']} head {row['head']}"
    return (f'<div class="card" data-checkpoint="{html.escape(str(row["checkpoint"]))}" '
            f'data-task="{html.escape(str(row["task"]))}" data-example="{int(row["example_id"])}" '
            f'data-layer="{int(row["layer"])}" data-head="{int(row["head"])}">'
            f'<img src="{image}" alt="map"><br>{html.escape(key)}<br>'
            f'<select onchange="changed(this)">{options}</select></div>')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("results"), help="results root of the workflow")
    parser.add_argument("--model", required=True, help="model name of the study (e.g. all-MiniLM-L6-v2)")
    parser.add_argument("--labels", type=Path, help="labels CSV whose maps to show (e.g. the workflow's seed sample)")
    parser.add_argument("--sample", type=int, default=400, help="without --labels: maps to draw at random (400)")
    parser.add_argument("--checkpoints", nargs="+", default=["pretrained"], help="without --labels: checkpoints")
    parser.add_argument("--tasks", nargs="+", help="without --labels: tasks (their dev dumps)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    parser.add_argument("--out", type=Path, required=True, help="folder for index.html and labels_template.csv")
    args = parser.parse_args(argv)

    if args.labels:
        sample = read_labels(args.labels, default_source="rule")
    elif args.tasks:
        sample = random_sample(args.results, args.model, args.checkpoints, args.tasks, args.sample, args.seed)
    else:
        parser.error("give --labels, or --tasks (and --checkpoints) to sample maps from the dumps")
    pairs = sorted(set(zip(sample["checkpoint"], sample["task"])))
    dumps = {(c, t): dump_paths(args.results, args.model, c, t) for c, t in pairs}
    _, rules, raws = collect_maps(sample, dumps, size=8, thresholds=default_thresholds(), raw=True)
    strings = {t: token_strings(dumps[(c, t)][1]) for c, t in pairs}
    cards = []
    for position, row in sample.reset_index(drop=True).iterrows():
        suggestion = CLASSES[rules[position]]
        tokens = strings[row["task"]].get(int(row["example_id"]))
        title = f"L{row['layer']} H{row['head']} (0-based); rule: {suggestion}"
        cards.append(card(row, render(raws[position], tokens, title), suggestion))
    args.out.mkdir(parents=True, exist_ok=True)
    page = PAGE.format(n=len(sample), model=html.escape(args.model), cards="\n".join(cards),
                       classes=json.dumps(list(CLASSES)), header=",".join(LABEL_COLUMNS))
    (args.out / "index.html").write_text(page, encoding="utf-8")
    # Spreadsheet route: fill in 'class' (rows left empty are ignored); the rule's guess is beside it.
    template = sample[["checkpoint", "task", "example_id", "layer", "head"]].copy()
    template["class"] = ""
    template["source"] = "human"
    template["rule_suggestion"] = [CLASSES[i] for i in rules]
    template.to_csv(args.out / "labels_template.csv", index=False)
    print(f"wrote {args.out / 'index.html'} ({len(sample)} maps) and {args.out / 'labels_template.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
