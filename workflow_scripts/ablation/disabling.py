"""Disabling one head at a time in a fine-tuned model and scoring its task (docs/ablation.md).

Michel et al. (2019) and Kovaleva et al. (2019) disable each head alone at test time and report the change
in the dev metric. :func:`run_head_disabling` loads a fine-tuned checkpoint once (with its
classifier), scores the task's main metric (its first, as the fine-tuning stage reports it) on the dev
examples unablated, then with every single head disabled, in every configured mode.

The dev examples are the fine-tuning stage's (``subset`` with the run's ``max_dev_examples``), of which
the first ``max_examples`` are scored; every evaluation of a job scores the same ones. They are batched in
order of length: the metrics do not depend on the order of the examples, and far less of each forward
pass goes to padding.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import write_csv
from ..core.labels import head_label
from ..data.entries import TaskSpec
from ..finetune.task_data import TaskData, load_split, subset
from .heads import MODES, HeadAblation, load_ablatable
from .tables import HEAD_DISABLING_COLUMNS

log = logging.getLogger(__name__)

def check_modes(modes: list[str]) -> list[str]:
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        raise AtlasError(f"ablation.modes: {unknown or 'none given'}; give one or more of {', '.join(MODES)}")
    return list(dict.fromkeys(modes))


def dev_examples(dev_path: str | Path, spec: TaskSpec, settings: dict[str, Any], tokenizer: Any, max_examples: int,
                 mirror: str | Path | None) -> TaskData:
    """The first ``max_examples`` of the dev examples fine-tuning scored, tokenized as it did, sorted by length."""
    frame = subset(load_split(dev_path, spec, spec.dev_split, mirror=mirror), settings.get("max_dev_examples"))
    return TaskData(frame.head(int(max_examples)), spec, tokenizer, settings, dev_path).sort_by_length()


class TaskScorer:
    """A fine-tuned checkpoint loaded once with its dev examples: the main metric, plain or with heads disabled."""

    def __init__(self, checkpoint_manifest: str | Path, dev_path: str | Path, *, task: dict[str, Any],
                 settings: dict[str, Any], max_examples: int, batch_size: int, device: str, offline: bool,
                 mirror: str | Path | None) -> None:
        from ..finetune.training import resolve_device

        self.spec = TaskSpec.from_params(dict(task))
        self.metric = self.spec.main_metric
        self.device = resolve_device(device)
        self.batch_size = int(batch_size)
        self.tokenizer, self.model = load_ablatable(checkpoint_manifest, offline=offline, classifier=True)
        self.model.to(self.device)
        self.data = dev_examples(dev_path, self.spec, dict(settings), self.tokenizer, max_examples, mirror)
        # The fine-tuning run's arithmetic (finetune.precision); fp32 for settings recorded before it existed.
        self.precision = settings.get("precision", "fp32")
        self.ablation = HeadAblation(self.model)

    def score(self, heads: set[tuple[int, int]] | None = None, mode: str = "zero") -> tuple[float, float]:
        """(main metric, seconds) with ``heads`` disabled in ``mode`` (None or empty: the plain model)."""
        from ..finetune.training import evaluate

        started = time.perf_counter()
        with self.ablation.ablating(heads or set(), mode):
            value = evaluate(self.model, self.data, self.batch_size, self.device, self.precision)[self.metric]
        return float(value), time.perf_counter() - started

    def baseline(self, modes: list[str]) -> tuple[float, float]:
        """The unablated (main metric, seconds); the same pass collects every head's mean output over the dev
        examples when mode 'mean' is asked for."""
        if "mean" not in modes or self.ablation.means is not None:
            return self.score()
        with self.ablation.collecting_means():
            return self.score()


def run_head_disabling(checkpoint_manifest: str | Path, dev_path: str | Path, output_csv: str | Path, *,
                       task: dict[str, Any], settings: dict[str, Any], modes: list[str], max_examples: int,
                       batch_size: int, device: str, threads: int, offline: bool, mirror: str | Path | None,
                       model: str, checkpoint: str) -> pd.DataFrame:
    """Score the task with every single head disabled, per mode; write the CSV (HEAD_DISABLING_COLUMNS) and return it.

    Rows: layers x heads x modes, each with the unablated score beside it (``delta = score - baseline``).
    """
    import torch

    torch.set_num_threads(max(1, int(threads)))
    modes = check_modes(list(modes))
    started = time.perf_counter()
    scorer = TaskScorer(checkpoint_manifest, dev_path, task=task, settings=settings, max_examples=max_examples,
                        batch_size=batch_size, device=device, offline=offline, mirror=mirror)
    baseline, baseline_seconds = scorer.baseline(modes)
    ablation = scorer.ablation
    log.info("%s/%s on %s: %d dev examples, %s %.4f unablated (%.1f s); %d layers x %d heads x %d mode(s) to go",
             model, checkpoint, scorer.spec.name, len(scorer.data), scorer.metric, baseline, baseline_seconds,
             ablation.num_layers, ablation.num_heads, len(modes))
    rows = []
    for mode in modes:
        for layer in range(ablation.num_layers):
            layer_started = time.perf_counter()
            deltas = []
            for head in range(ablation.num_heads):
                value, seconds = scorer.score({(layer, head)}, mode)
                deltas.append(value - baseline)
                rows.append({"model": model, "checkpoint": checkpoint, "task": scorer.spec.name,
                             "metric": scorer.metric, "mode": mode, "layer": layer, "head": head,
                             "head_label": head_label(layer, head), "score": value, "baseline_score": baseline,
                             "delta": value - baseline, "n_examples": len(scorer.data), "seconds": round(seconds, 3)})
            finite = np.isfinite(deltas)  # a correlation is NaN when every prediction is the same
            worst = int(np.nanargmin(deltas)) if finite.any() else 0
            log.info("mode %s, layer %d/%d: mean delta %+.4f, largest drop %+.4f (head %s); %.1f s", mode, layer + 1,
                     ablation.num_layers, float(np.mean(np.asarray(deltas)[finite])) if finite.any() else np.nan,
                     deltas[worst], head_label(layer, worst), time.perf_counter() - layer_started)
    frame = pd.DataFrame(rows, columns=HEAD_DISABLING_COLUMNS)
    write_csv(frame, output_csv)
    log.info("%d head-disabling rows written to %s in %.0f s", len(frame), output_csv, time.perf_counter() - started)
    return frame
