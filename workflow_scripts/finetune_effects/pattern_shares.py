"""Share of each pattern class per (checkpoint, task) (METHODS 8.1 c), by the rules or the CNN.

The share counts (example, head) maps; its 95% interval resamples examples (METHODS 10).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import write_csv
from ..core.stats import ratio_bootstrap_ci
from .pattern_cnn import classify_dump
from .pattern_rules import CLASSES
from .patterns import checkpoint_info


def class_shares(example_ids: np.ndarray, labels: np.ndarray, *, resamples: int, seed: int) -> pd.DataFrame:
    """Share of maps per class with a 95% interval over examples: class, share, ci_low, ci_high, n, n_examples."""
    example_ids = np.asarray(example_ids)
    labels = np.asarray(labels)
    units, unit_of = np.unique(example_ids, return_inverse=True)
    counts = np.zeros((len(units), len(CLASSES)))
    np.add.at(counts, (unit_of, labels), 1.0)
    totals = counts.sum(axis=1)
    share, low, high = ratio_bootstrap_ci(counts, totals, resamples=resamples, seed=seed)
    return pd.DataFrame({"class": CLASSES, "share": share, "ci_low": low, "ci_high": high,
                         "n_maps": counts.sum(axis=0).astype(int), "n": int(totals.sum()),
                         "n_examples": len(units)})


def pattern_classes_part(features_path: str | Path, output: str | Path, *, model: str, checkpoint: str,
                         task: str, checkpoint_manifest: str | Path, classifier: str, resamples: int,
                         cnn_model: str | Path | None = None, dump_dir: str | Path | None = None,
                         token_table: str | Path | None = None, seed: int, threads: int) -> pd.DataFrame:
    """Class shares of one (checkpoint, task) by ``classifier``.

    ``rule``: the rule labels of the feature table at ``features_path``; ``cnn``: the classes the
    trained CNN at ``cnn_model`` gives the same maps, read from ``dump_dir`` (token table ``token_table``).
    """
    features = pd.read_parquet(features_path, columns=["example_id", "layer", "head", "rule_class"])
    if classifier == "rule":
        labels = np.array([CLASSES.index(c) for c in features["rule_class"]], dtype=np.int64)
        example_ids = features["example_id"].to_numpy()
    elif classifier == "cnn":
        if cnn_model is None or dump_dir is None or token_table is None:
            raise AtlasError("classifier 'cnn' needs cnn_model, dump_dir and token_table; got "
                             f"{cnn_model}, {dump_dir} and {token_table}")
        example_ids, labels = classify_dump(cnn_model, dump_dir, token_table,
                                            set(features["example_id"].unique().tolist()), threads=threads)
    else:
        raise AtlasError(f"classifier {classifier!r} is not 'rule' or 'cnn'")
    shares = class_shares(example_ids, labels, resamples=resamples, seed=seed)
    info = checkpoint_info(checkpoint_manifest)
    frame = pd.DataFrame({"model": model, "checkpoint": checkpoint, "task": task, **info,
                          "classifier": classifier, "bootstrap_seed": seed, **shares.to_dict("list")})
    write_csv(frame, output)
    return frame
