"""Dev-set metrics as GLUE defines them (METHODS 3), as plain NumPy functions.

- CoLA: Matthews correlation;
- MRPC, QQP: accuracy and F1 of the positive class (label 1: equivalent / duplicate);
- STS-B: Pearson and Spearman correlation;
- every other task (SST-2, MNLI, QNLI, RTE, WNLI, WiC): accuracy.

The functions follow scikit-learn and SciPy exactly (tests/finetune/test_metrics.py checks
them against ``sklearn.metrics`` and ``scipy.stats`` on fixed inputs), including
the degenerate cases: Matthews correlation and F1 are 0 when undefined (as
scikit-learn returns them), a correlation with a constant input is NaN (as SciPy).
Kept free of scikit-learn and SciPy so that the fine-tuning environment stays small.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pair(predictions: Sequence, labels: Sequence) -> tuple[np.ndarray, np.ndarray]:
    pred, gold = np.asarray(predictions), np.asarray(labels)
    if pred.shape != gold.shape or pred.ndim != 1:
        raise ValueError(f"predictions and labels must be 1-D of equal length (got {pred.shape} and {gold.shape})")
    if pred.size == 0:
        raise ValueError("no examples to score")
    return pred, gold


def accuracy(predictions: Sequence, labels: Sequence) -> float:
    pred, gold = _pair(predictions, labels)
    return float(np.mean(pred == gold))


def f1(predictions: Sequence, labels: Sequence, positive: int = 1) -> float:
    """F1 of the positive class (scikit-learn's binary F1; 0 when undefined)."""
    pred, gold = _pair(predictions, labels)
    tp = int(np.sum((pred == positive) & (gold == positive)))
    fp = int(np.sum((pred == positive) & (gold != positive)))
    fn = int(np.sum((pred != positive) & (gold == positive)))
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def matthews_corr(predictions: Sequence, labels: Sequence) -> float:
    """Matthews correlation, multi-class form (Gorodkin 2004), as scikit-learn computes it."""
    pred, gold = _pair(predictions, labels)
    classes, encoded = np.unique(np.concatenate([gold, pred]), return_inverse=True)
    k, n = len(classes), len(gold)
    confusion = np.zeros((k, k), dtype=np.float64)
    np.add.at(confusion, (encoded[:n], encoded[n:]), 1)
    t = confusion.sum(axis=1)  # times each class truly occurred
    p = confusion.sum(axis=0)  # times each class was predicted
    c, s = np.trace(confusion), confusion.sum()
    cov_ytyp = c * s - t @ p
    cov_ypyp = s * s - p @ p
    cov_ytyt = s * s - t @ t
    if cov_ypyp * cov_ytyt == 0:
        return 0.0
    return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson(predictions: Sequence, labels: Sequence) -> float:
    """Pearson's r; NaN when either input is constant (as scipy.stats.pearsonr)."""
    x, y = _pair(predictions, labels)
    x, y = x.astype(np.float64), y.astype(np.float64)
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    dx, dy = dx / np.linalg.norm(dx), dy / np.linalg.norm(dy)
    return float(np.clip(dx @ dy, -1.0, 1.0))


def rank(values: Sequence) -> np.ndarray:
    """Ranks from 1, ties sharing their average rank (scipy.stats.rankdata 'average')."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    # Start of each run of equal values, and each run's average (1-based) rank.
    starts = np.flatnonzero(np.concatenate([[True], sorted_x[1:] != sorted_x[:-1]]))
    ends = np.concatenate([starts[1:], [x.size]])
    average = (starts + ends + 1) / 2.0
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = np.repeat(average, ends - starts)
    return ranks


def spearman(predictions: Sequence, labels: Sequence) -> float:
    """Spearman's rho: Pearson's r of the average ranks (as scipy.stats.spearmanr)."""
    x, y = _pair(predictions, labels)
    return pearson(rank(x), rank(y))


METRIC_FUNCTIONS = {
    "accuracy": accuracy,
    "f1": f1,
    "matthews_corr": matthews_corr,
    "pearson": pearson,
    "spearman": spearman,
}


def task_scores(metrics: Sequence[str], predictions: Sequence, labels: Sequence) -> dict[str, float]:
    """Every metric of a task (its entry's ``metrics``): class ids (or scores) against the gold labels."""
    return {name: METRIC_FUNCTIONS[name](predictions, labels) for name in metrics}


def majority_baseline(metrics: Sequence[str], regression: bool, labels: Sequence,
                      train_labels: Sequence | None = None) -> dict[str, float]:
    """Metrics of a constant predictor on ``labels``: the most frequent class.

    The class is the most frequent one of ``train_labels`` when given (what a trivial
    classifier would learn), else of ``labels`` themselves (the dev majority, the usual
    reference); ties go to the smaller class id. For a regression task (STS-B) the constant is the mean score,
    whose correlations are undefined (NaN).
    """
    gold = np.asarray(labels)
    if regression:
        source = np.asarray(train_labels if train_labels is not None else gold, dtype=np.float64)
        constant = np.full(gold.shape, source.mean())
    else:
        classes, counts = np.unique(np.asarray(train_labels if train_labels is not None else gold),
                                    return_counts=True)
        constant = np.full(gold.shape, classes[np.argmax(counts)])
    return task_scores(metrics, constant, gold)
