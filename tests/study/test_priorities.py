"""The long pole first (workflow_scripts/study/priorities.py): fine-tuning runs ranked by the tokens they
train on, each job given the priority of the run it waits for or leads to, and Snakemake told so for every rule."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.study.priorities import JobPriorities, finetune_cost, tokens_per_example

# The offline profile's fine-tuning as it was when RTE ran last (2026-11-28): all of RTE, six epochs.
OFFLINE_LIKE = {**one_model(tasks=["cola", "sst2", "rte", "wnli"]),
                "finetune": {"max_train_examples": 2000, "per_task": {"cola": {"max_train_examples": None},
                                                                      "rte": {"max_train_examples": None,
                                                                              "epochs": 6}}}}


@pytest.fixture(scope="module")
def study():
    return study_of(OFFLINE_LIKE)


def test_runs_are_ranked_by_the_tokens_they_train_on(study):
    # Examples (train size, max_train_examples) x epochs x the measured mean tokens of the task's inputs.
    epochs = study.finetune_settings("sst2")["epochs"]
    assert finetune_cost(study, MODEL, "rte") == pytest.approx(2490 * 6 * tokens_per_example(study, "rte", 128))
    assert finetune_cost(study, MODEL, "sst2") == pytest.approx(2000 * epochs * tokens_per_example(study, "sst2", 128))
    assert tokens_per_example(study, "rte", 128) == pytest.approx(5222.0 ** 0.5)  # RTE's pairs: ~72 tokens
    assert tokens_per_example(study, "rte", 32) == 32  # capped at the run's max_length
    priorities = JobPriorities(study)
    ranked = sorted(["cola", "sst2", "rte", "wnli"], key=lambda task: priorities.of_run(MODEL, task))
    # CoLA has 8551 sentences of ~13 tokens; RTE 2490 pairs of ~72 tokens, six epochs: the long pole.
    assert ranked == ["wnli", "sst2", "cola", "rte"]
    assert [priorities.of_run(MODEL, task) for task in ranked] == [1, 2, 3, 4]


def test_each_job_takes_the_priority_of_the_run_it_waits_for_or_leads_to(study):
    priorities = JobPriorities(study)
    rte = priorities.of_run(MODEL, "rte")
    job = lambda **wildcards: priorities.of_job(SimpleNamespace(**wildcards))  # noqa: E731
    # What waits for the run: every job on one of its checkpoints, the subjects of its model included.
    assert job(model=MODEL, checkpoint="rte.seed42.final", corpus="rte", split="dev") == rte
    assert job(model=f"{MODEL}@norm", checkpoint="rte.seed42.step50") == rte
    assert job(model=MODEL, task="rte", seed="42") == rte  # head disabling of the run's final checkpoint
    # What the run waits for: its task's data tables, its model's card and pretrained checkpoint.
    assert job(task="rte", split="train") == rte
    assert job(model=MODEL) == rte  # the most of the model's runs
    # Anything else: no priority, whatever corpus it reads.
    assert job(model=MODEL, checkpoint="pretrained", corpus="rte", split="dev") == 0
    assert job(model=MODEL, checkpoint="random", corpus="wiki", split="segments") == 0
    assert job(corpus="ewt", split="dev") == 0 and job() == 0
    # The fine-tuning rules: their own run's, by the model wildcard.
    assert priorities.for_rule("finetune_rte")(SimpleNamespace(model=MODEL)) == rte
    assert priorities.for_rule("finetune_metrics_table") == priorities.of_job


def test_a_study_without_fine_tuning_gives_every_job_priority_zero():
    priorities = JobPriorities(study_of(one_model(tasks=[])))
    assert priorities.of_job(SimpleNamespace(model=MODEL, checkpoint="pretrained")) == 0
    assert priorities.of_job(SimpleNamespace(model=MODEL)) == 0
