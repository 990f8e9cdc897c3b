"""A fine-tuning run that learnt nothing is said (finetune/tables.py): not above its majority baseline (0 for a
correlation without one) at its final checkpoint, it is marked in finetune_metrics.csv, named in the closing message
of the run, and drawn grey with "at chance" in summary panel E."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from workflow_scripts.finetune.report import draw_finetune  # noqa: E402
from workflow_scripts.finetune.tables import at_chance_warnings, metrics_table, runs_at_chance  # noqa: E402
from workflow_scripts.runtime.closing_message import closing_message  # noqa: E402


def record(task: str, metric: str, value: float, baseline: float, *, regression: bool = False) -> dict:
    return {"model": "m", "task": task, "seed": 42, "n_dev": 100, "n_train": 320, "main_metric": metric,
            "majority_baseline": {metric: float("nan") if regression else baseline},
            "evaluations": [{"step": "final", "checkpoint": f"{task}.seed42.final", "global_step": 40,
                             "metrics": {metric: value}}]}


def write_runs(folder, runs) -> list:
    paths = []
    for run in runs:
        path = folder / f"{run['task']}.json"
        path.write_text(json.dumps(run))
        paths.append(path)
    return paths


def test_runs_not_above_chance_are_marked_named_and_said(tmp_path):
    paths = write_runs(tmp_path, [
        record("sst2", "accuracy", 0.49, 0.509),      # the quickstart's LoRA at full fine-tuning's rate
        record("mrpc", "f1", 0.81, 0.81),             # equal to always-positive: not above chance
        record("cola", "matthews_corr", 0.0, 0.0),    # constant predictions
        record("stsb", "pearson", 0.35, 0.0, regression=True),  # no baseline: above 0 learnt something
        record("rte", "accuracy", 0.61, 0.527)])
    table = metrics_table(paths, tmp_path / "finetune_metrics.csv")
    assert dict(zip(table["task"], table["above_chance"])) == {
        "cola": False, "mrpc": False, "rte": True, "sst2": False, "stsb": True}
    at_chance = runs_at_chance(pd.read_csv(tmp_path / "finetune_metrics.csv"))
    assert [(r["task"], r["value"], r["chance"]) for r in at_chance] == [
        ("cola", 0.0, 0.0), ("mrpc", 0.81, 0.81), ("sst2", 0.49, 0.509)]
    warnings = at_chance_warnings(tmp_path / "finetune_metrics.csv")
    assert warnings[0].startswith("Fine-tuning that learnt nothing") and len(warnings) == 4
    assert "m fine-tuned on sst2 (seed 42) is not above chance: final dev accuracy 0.490, chance 0.509" in warnings[3]
    message = closing_message(tmp_path / "results", ["snakemake"], warnings)
    assert message.splitlines()[:4] == warnings[:4] and "snakemake --report report.html" in message
    assert at_chance_warnings(tmp_path / "absent.csv") == []


def test_panel_e_draws_a_run_at_chance_grey_and_says_so(tmp_path):
    from types import SimpleNamespace

    paths = write_runs(tmp_path, [record("sst2", "accuracy", 0.49, 0.509), record("rte", "accuracy", 0.61, 0.527)])
    table = metrics_table(paths, tmp_path / "finetune_metrics.csv")
    tables = SimpleNamespace(model_rows=lambda name, model: (table, None))
    figure, ax = plt.subplots()
    assert draw_finetune(ax, "m", tables, [], None) is None
    bars = {round(p.get_height()): p.get_facecolor() for p in ax.patches}
    assert bars[49][:3] == (0.7, 0.7, 0.7) and bars[61][:3] != (0.7, 0.7, 0.7)
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("49\nat chance") for t in texts) and "61" in texts
    plt.close(figure)
