"""The pattern CNN's scores on labelled maps (tables/pattern_classifier.csv): macro-F1, accuracy and F1 per class, and
their 95% bootstrap intervals over the scored examples, so that a score on a few dozen held-out maps says how noisy
it is (docs/finetune_effects.md)."""

from __future__ import annotations

import numpy as np

from .pattern_rules import CLASSES


def f1_scores(truth: np.ndarray, predicted: np.ndarray) -> tuple[float, float, dict[str, float]]:
    """(macro-F1 over the classes present in truth or prediction, accuracy, F1 per class)."""
    from sklearn.metrics import f1_score

    truth, predicted = np.asarray(truth), np.asarray(predicted)
    if len(truth) == 0:
        return float("nan"), float("nan"), {c: float("nan") for c in CLASSES}
    present = sorted(set(truth.tolist()) | set(predicted.tolist()))
    per_class = f1_score(truth, predicted, labels=list(range(len(CLASSES))), average=None, zero_division=0)
    per = {c: (float(per_class[i]) if i in present else float("nan")) for i, c in enumerate(CLASSES)}
    macro = float(f1_score(truth, predicted, labels=present, average="macro", zero_division=0))
    return macro, float(np.mean(truth == predicted)), per


def macro_f1_accuracy(truth: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    """(macro-F1, accuracy) as :func:`f1_scores` computes them (F1 per class present in truth or prediction, 0 where
    a class has no true positive), from the confusion counts: the bootstrap's thousands of resamples each need
    them."""
    size = len(CLASSES)
    counts = np.bincount(truth * size + predicted, minlength=size * size).reshape(size, size)
    true_positive = np.diag(counts).astype(float)
    actual, guessed = counts.sum(axis=1), counts.sum(axis=0)
    present = (actual + guessed) > 0
    f1 = np.divide(2 * true_positive, actual + guessed, out=np.zeros(size), where=present)
    return float(f1[present].mean()), float(true_positive.sum() / len(truth))


def score_intervals(truth: np.ndarray, predicted: np.ndarray, groups: np.ndarray, *, resamples: int,
                    seed: int) -> dict[str, float]:
    """95% percentile bootstrap intervals of the macro-F1 and the accuracy over the scored maps, resampling their
    examples (``groups``) with all of an example's maps together: the maps of one input are not independent. NaN with
    fewer than two examples or no resample."""
    found = {f"{name}_{end}": float("nan") for name in ("macro_f1", "accuracy") for end in ("low", "high")}
    examples, inverse = np.unique(np.asarray(groups), return_inverse=True)
    if resamples <= 0 or len(examples) < 2:
        return found
    members = [np.flatnonzero(inverse == k) for k in range(len(examples))]
    truth, predicted = np.asarray(truth, dtype=np.int64), np.asarray(predicted, dtype=np.int64)
    rng = np.random.default_rng(seed)
    macros, accuracies = [], []
    for _ in range(resamples):
        rows = np.concatenate([members[k] for k in rng.integers(0, len(examples), size=len(examples))])
        macro, accuracy = macro_f1_accuracy(truth[rows], predicted[rows])
        macros.append(macro)
        accuracies.append(accuracy)
    for name, values in (("macro_f1", macros), ("accuracy", accuracies)):
        found[f"{name}_low"], found[f"{name}_high"] = (float(v) for v in np.quantile(values, [0.025, 0.975]))
    return found
