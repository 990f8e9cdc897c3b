"""The GLUE metrics (workflow_scripts.finetune.metrics) agree with scikit-learn and SciPy on fixed inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from support.entries import TASKS
from workflow_scripts.finetune.metrics import (
    accuracy,
    f1,
    majority_baseline,
    matthews_corr,
    pearson,
    rank,
    spearman,
    task_scores,
)

GOLD = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1])
PRED = np.array([1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1])
GOLD3 = np.array([0, 1, 2, 2, 1, 0, 0, 2, 1, 1, 2, 0])
PRED3 = np.array([0, 2, 2, 1, 1, 0, 1, 2, 1, 0, 2, 0])
SCORES = np.array([0.0, 1.2, 3.4, 5.0, 2.2, 2.2, 4.8, 0.4, 3.3, 1.0])
PREDICTED = np.array([0.3, 0.9, 3.9, 4.1, 2.0, 2.5, 4.9, 1.5, 2.6, 1.0])


def test_accuracy_f1_matthews_match_sklearn():
    assert accuracy(PRED, GOLD) == pytest.approx(skm.accuracy_score(GOLD, PRED))
    assert f1(PRED, GOLD) == pytest.approx(skm.f1_score(GOLD, PRED))
    assert matthews_corr(PRED, GOLD) == pytest.approx(skm.matthews_corrcoef(GOLD, PRED))
    # Multi-class Matthews (MNLI-like labels), and the degenerate constant predictor.
    assert matthews_corr(PRED3, GOLD3) == pytest.approx(skm.matthews_corrcoef(GOLD3, PRED3))
    constant = np.ones_like(GOLD)
    assert matthews_corr(constant, GOLD) == skm.matthews_corrcoef(GOLD, constant) == 0.0
    none_positive = np.zeros_like(GOLD)
    assert f1(none_positive, none_positive) == skm.f1_score(none_positive, none_positive, zero_division=0.0)


def test_correlations_match_scipy():
    assert pearson(PREDICTED, SCORES) == pytest.approx(stats.pearsonr(PREDICTED, SCORES)[0])
    assert spearman(PREDICTED, SCORES) == pytest.approx(stats.spearmanr(PREDICTED, SCORES)[0])
    np.testing.assert_allclose(rank(SCORES), stats.rankdata(SCORES))  # ties share the average rank
    assert math.isnan(pearson(np.full(5, 2.0), np.arange(5.0)))  # constant input: undefined, as SciPy


def test_task_metrics_and_majority_baseline():
    assert TASKS["cola"].metrics == ("matthews_corr",)
    assert TASKS["mrpc"].metrics == ("f1", "accuracy") and TASKS["qqp"].metrics == ("f1", "accuracy")
    assert TASKS["stsb"].metrics == ("pearson", "spearman")
    assert all(TASKS[t].metrics == ("accuracy",) for t in ("sst2", "mnli", "qnli", "rte", "wnli", "wic"))
    assert TASKS["mrpc"].main_metric == "f1"
    scores = task_scores(TASKS["mrpc"].metrics, PRED, GOLD)
    assert scores == {"f1": pytest.approx(skm.f1_score(GOLD, PRED)), "accuracy": pytest.approx(0.75)}
    # Majority of GOLD is 1 (9 of 16): accuracy 9/16, F1 of predicting all positive.
    base = majority_baseline(TASKS["mrpc"].metrics, False, GOLD)
    assert base["accuracy"] == pytest.approx(9 / 16)
    assert base["f1"] == pytest.approx(skm.f1_score(GOLD, np.ones_like(GOLD)))
    assert majority_baseline(TASKS["cola"].metrics, False, GOLD) == {"matthews_corr": 0.0}
    assert all(math.isnan(v) for v in majority_baseline(TASKS["stsb"].metrics, True, SCORES).values())


def test_shape_errors():
    with pytest.raises(ValueError, match="equal length"):
        accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="no examples"):
        accuracy([], [])
