"""The plan's time estimate (workflow_scripts/study/plan_timing.py): rates measured with torch on a tiny model
(positive, finite seconds), rates given with --rate, the estimate as counts x rates (known by construction),
models built from their config when their weights are not here, and the reason when nothing can be timed."""

from __future__ import annotations

import json
import math

import pytest

from support.mirror import write_tiny_study
from workflow_scripts.study.build import build_study
from workflow_scripts.study.config import resolve_config
from workflow_scripts.study.plan import _time_lines, main
from workflow_scripts.study.plan_timing import (
    NotTimed,
    Rates,
    duration,
    estimate,
    load_classifier,
    model_config,
    parse_rates,
    pick_device,
    seconds_per_pass,
    time_model,
    time_models,
)


@pytest.fixture(scope="module")
def study(tiny_bert, tmp_path_factory):
    """The tiny study on the tiny BERT of the fixtures (its weights saved), on the CPU."""
    work = write_tiny_study(tmp_path_factory.mktemp("timing"), tiny_bert)
    return build_study(resolve_config([str(work / "tiny.yaml")], [
        f"results={work / 'results'}", "attention={device: cpu}", "finetune={device: cpu}"]))


def test_measured_rates_are_positive_finite_seconds_and_leave_torch_as_it_was(study):
    import torch

    threads = torch.get_num_threads()
    rates = time_model(study, "tiny", network=False)
    assert all(0 < value < math.inf for value in (rates.forward, rates.train))
    # The settings of the jobs: the model's max_length (32), the tiny study's batches (attention 32 capped
    # at 4 on a CPU, fine-tuning 4) and threads (1 each).
    assert rates.how.startswith("measured here on its weights: forward cpu, 1 thread, batches of 4 x 32 tokens; "
                                "train cpu, 1 thread, batches of 4 x 32 tokens, the optimizer step shared by 4")
    assert torch.get_num_threads() == threads


def test_a_pass_is_timed_after_a_warm_up_and_within_its_budget():
    calls = []
    seconds = seconds_per_pass(lambda: calls.append(1), "cpu", passes=3, budget_s=10.0)
    assert len(calls) == 1 + 3 and 0 <= seconds < 1
    calls.clear()
    seconds_per_pass(lambda: calls.append(__import__("time").sleep(0.02)), "cpu", passes=3, budget_s=0.01)
    assert len(calls) == 1 + 1  # the first timed pass already spent the budget


def test_a_model_without_its_weights_is_built_from_its_config(study, tmp_path):
    folder = tmp_path / "config-only"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "num_hidden_layers": 1,
                                                    "num_attention_heads": 2, "hidden_size": 16,
                                                    "intermediate_size": 32, "vocab_size": 50}))
    config = json.loads(json.dumps(study.config))
    config["models"]["tiny"] = {**config["models"]["tiny"], "path": str(folder)}
    classifier, source = load_classifier(build_study(config), "tiny", network=False)
    assert source == "random weights on its config.json" and classifier.config.num_hidden_layers == 1


def test_a_hub_model_not_here_is_built_from_its_known_config_or_not_timed():
    study = build_study(resolve_config([], ["models={nowhere: {hub: nobody/no-such-model}}"]))
    config, source = model_config(study, "bert-base-uncased", network=False)
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (12, 768, 30522)
    assert source in ("its config.json in the hub cache", "the hub's config.json as plan_timing.py records it")
    with pytest.raises(NotTimed, match="no config.json of nobody/no-such-model in the hub cache, and the hub is not "
                                       "asked offline or with --no-network"):
        model_config(study, "nowhere", network=False)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_a_gpu_asked_for_where_there_is_none_is_not_timed(study):
    with pytest.raises(NotTimed, match="torch sees no GPU here"):
        pick_device("cuda")
    config = json.loads(json.dumps(study.config))
    config["attention"]["device"] = "cuda"
    assert time_models(build_study(config), network=False) == {
        "tiny": {"not_timed": "its device is 'cuda' and torch sees no GPU here (give --rate)"}}


def test_the_estimate_is_each_models_counts_times_its_rates():
    counts = {"extraction": 10, "finetune_train": 100, "finetune_dev": 20, "gradient": 4, "ablation_disabling": 50,
              "ablation_found_heads_at_most": 30}
    rates = {"a": {"forward": 0.1, "train": 1.0}, "b": {"forward": 0.2, "train": 3.0},
             "c": {"not_timed": "no config"}}
    found = estimate({"a": counts, "b": counts, "c": counts}, rates)
    assert found["seconds"] == pytest.approx({
        "fine-tuning": 100 * 1.0 + 20 * 0.1 + 100 * 3.0 + 20 * 0.2, "extraction": 10 * 0.1 + 10 * 0.2,
        "separator gradient": 4 * 1.0 + 4 * 3.0, "head disabling": 50 * 0.1 + 50 * 0.2,
        "found heads (at most)": 30 * 0.1 + 30 * 0.2})
    assert found["total_s"] == pytest.approx(sum(found["seconds"].values()))
    assert found["not_counted"] == ["c"]  # named, not counted


def test_rates_given_on_the_command_line():
    assert parse_rates("forward=0.068, train=0.257") == Rates(0.068, 0.257, "given with --rate")
    for wrong in ("forward=0.068", "forward=0.1,train=x", "forward=-1,train=1", "speed=1,train=1"):
        with pytest.raises(ValueError, match="--rate"):
            parse_rates(wrong)
    with pytest.raises(SystemExit):  # refused before any dry run
        main(["--rate", "forward=0.1"])


def test_durations_are_printed_in_the_unit_one_plans_with():
    assert [duration(s) for s in (42, 90, 7200, 3 * 86400)] == ["42 s", "1.5 min", "2.0 h", "3.0 days"]


def test_every_study_model_gets_the_given_rates(study):
    given = Rates(0.5, 2.0, "given with --rate")
    assert time_models(study, network=False, given=given) == {"tiny": {"forward": 0.5, "train": 2.0,
                                                                       "how": "given with --rate"}}


def test_a_busy_machine_is_said_beside_the_rates(study, monkeypatch):
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (100.0, 100.0, 100.0))
    assert "BUSY MACHINE: load average 100.0" in time_model(study, "tiny", network=False).how


def test_the_printed_time_says_what_was_timed_and_what_was_not():
    counts = {"extraction": 1000, "finetune_train": 3000, "finetune_dev": 100, "gradient": 0,
              "ablation_disabling": 500, "ablation_found_heads_at_most": 200}
    rates = {"a": {"forward": 0.01, "train": 0.03, "how": "measured here on its weights: forward cpu, ..."},
             "b": {"not_timed": "no config.json of nobody/x here (not in the hub cache)"}}
    time = {"given": False, "rates": rates, **estimate({"a": counts, "b": counts}, rates)}
    lines = _time_lines({"time": time})
    assert lines[0] == ("Estimated time on this machine: 1.8 min for a, one job at a time: examples above x seconds "
                        "per example of each model (plan_timing.py)")
    assert "  a: 0.01 s per example forward (with maps), 0.03 s per training example" in lines
    assert "    measured here on its weights: forward cpu, ..." in lines
    assert "  b: not timed, no config.json of nobody/x here (not in the hub cache); not in the estimate" in lines
    # 3000 x 0.03 + 100 x 0.01 = 91 s of fine-tuning, 1000 x 0.01 = 10 s of extraction, 500 and 200 x 0.01 of
    # ablation: 108 s in all; model b is named, not counted.
    rule = "training examples x train rate + dev examples x forward rate"
    assert f"  {'fine-tuning':<22}{'1.5 min':>11}  {rule}" in lines
    assert f"  {'extraction':<22}{'10 s':>11}  examples x forward rate" in lines
    assert any(line.startswith("  Inputs timed at max_length") for line in lines)
    assert _time_lines({"time": {**time, "rates": {"b": rates["b"]}}})[0].startswith("Estimated time: none")
