"""The plan's time estimate (workflow_scripts/study/forecast/timing.py): rates measured with torch on a tiny model
(positive, finite seconds), the storage rate measured on a folder's disk, rates given with --rate, the estimate
as counts x rates and extraction as the larger of its forward passes and its storage (known by construction),
the stage that bounds it, models built from their config when their weights are not here, and the reason when
nothing can be timed."""

from __future__ import annotations

import json
import math

import pytest

from support.mirror import write_tiny_study
from workflow_scripts.study.build import build_study
from workflow_scripts.study.checks import resolve_config
from workflow_scripts.study.forecast.plan import main
from workflow_scripts.study.forecast.text import time_lines
from workflow_scripts.study.forecast.timing import (
    NotTimed,
    Rates,
    duration,
    estimate,
    load_classifier,
    model_config,
    parse_rates,
    pick_device,
    seconds_per_pass,
    storage_rate,
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
    assert source in ("its config.json in the hub cache", "the hub's config.json as models/known_configs.py records it")
    with pytest.raises(NotTimed, match="no config.json of nobody/no-such-model in the hub cache, and the hub is not "
                                       r"asked here \(offline, --no-network"):
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


def test_the_storage_rate_is_timed_on_the_folders_disk_and_leaves_nothing_there(tmp_path):
    # A folder that does not exist yet (a results folder before the first run) is timed on its nearest
    # existing parent, here tmp_path; a few MiB keep the test short.
    found = storage_rate(tmp_path / "results" / "not-yet", size=4 * 2**20, chunk=2**20)
    assert 0 < found["seconds_per_gb"] < math.inf
    assert found["how"].startswith(f"measured here: 4 MiB written to {tmp_path} without fsync (")
    assert list(tmp_path.iterdir()) == []  # the temporary file is removed
    (tmp_path / "a-file").write_text("")
    assert storage_rate(tmp_path / "a-file", size=2**20, chunk=2**20)["not_timed"].startswith(
        f"{tmp_path / 'a-file'} cannot be written here (")


def test_extraction_is_the_larger_of_its_forward_passes_and_its_storage_per_dump():
    counts = dict.fromkeys(("finetune_train", "finetune_dev", "gradient", "ablation_disabling",
                            "ablation_found_heads_at_most"), 0) | {"extraction": 1500}
    rates = {"a": {"forward": 0.001, "train": 0.01}, "c": {"not_timed": "no config"}}
    # Dump 1: 1000 examples x 0.001 s = 1 s of forward passes against 3 GB x 2 s per GB = 6 s of storage;
    # dump 2: 500 examples = 0.5 s against 0.1 GB = 0.2 s; model c's dump is not counted.
    dumps = [("a", 1000, 3e9), ("a", 500, 1e8), ("c", 10, 1e12)]
    found = estimate({"a": counts, "c": counts}, rates, dumps, {"seconds_per_gb": 2.0, "how": "given with --rate"})
    assert found["seconds"]["extraction"] == pytest.approx(6.0 + 0.5)
    assert found["extraction"] == pytest.approx({"forward_s": 1.5, "storage_s": 6.2, "bytes": 3.1e9,
                                                 "bound_by": "storage"})
    assert found["bound_by"] == "extraction" and found["total_s"] == pytest.approx(6.5)
    # With no storage rate, extraction is its forward passes; the bound is the largest line.
    plain = estimate({"a": counts | {"finetune_train": 200}, "c": counts}, rates, dumps, {"not_timed": "read-only"})
    assert plain["seconds"]["extraction"] == pytest.approx(1.5) and plain["extraction"]["storage_s"] is None
    assert plain["bound_by"] == "fine-tuning"  # 200 x 0.01 = 2 s against 1.5 s


def test_rates_given_on_the_command_line():
    assert parse_rates("forward=0.068, train=0.257") == Rates(0.068, 0.257, "given with --rate")
    assert parse_rates("forward=0.068,train=0.257,storage=1.3") == Rates(0.068, 0.257, "given with --rate", 1.3)
    for wrong in ("forward=0.068", "forward=0.1,train=x", "forward=-1,train=1", "speed=1,train=1", "storage=1",
                  "forward=1,train=1,storage=0", "forward=1,train=1,storage=inf"):
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
    storage = {"seconds_per_gb": 2.0, "how": "measured here: 256 MiB written to /r without fsync ..."}
    # Its one dump: 1000 x 0.01 = 10 s of forward passes, against 3 GB x 2 s per GB = 6 s of storage.
    time = {"given": False, "rates": rates, "storage": storage,
            **estimate({"a": counts, "b": counts}, rates, [("a", 1000, 3e9)], storage)}
    lines = time_lines({"time": time})
    assert lines[0] == ("Estimated time on this machine: 1.8 min for a, one job at a time: examples above x seconds "
                        "per example of each model (forecast/timing.py)")
    assert "  a: 0.01 s per example forward (with maps), 0.03 s per training example" in lines
    assert "    measured here on its weights: forward cpu, ..." in lines
    assert "  b: not timed, no config.json of nobody/x here (not in the hub cache); not in the estimate" in lines
    assert ("  storage: 2 s per GB of dump written and hashed\n    measured here: 256 MiB written to /r without "
            "fsync ...") in lines
    # 3000 x 0.03 + 100 x 0.01 = 91 s of fine-tuning, 1000 x 0.01 = 10 s of extraction, 500 and 200 x 0.01 of
    # ablation: 108 s in all; model b is named, not counted.
    rule = "training examples x train rate + dev examples x forward rate"
    assert f"  {'fine-tuning':<22}{'1.5 min':>11}  {rule}" in lines
    assert f"  {'extraction':<22}{'10 s':>11}  per dump the larger of examples x forward rate (10 s in all) and GB " \
           "x storage rate (6 s for 3.0 GB), as the writer thread overlaps the model" in lines
    assert "  Bound by fine-tuning: 1.5 min of 1.8 min (84%), the longest line above" in lines
    assert any(line.startswith("  Inputs timed at max_length") for line in lines)
    assert time_lines({"time": {**time, "rates": {"b": rates["b"]}}})[0].startswith("Estimated time: none")
    unwritable = {"not_timed": "/r cannot be written here (Read-only)"}
    lines = time_lines({"time": {**time, "storage": unwritable,
                                  **estimate({"a": counts}, rates, [("a", 1000, 3e9)], unwritable)}})
    assert "  storage: not timed, /r cannot be written here (Read-only); extraction counts its forward passes only" \
        in lines
    assert f"  {'extraction':<22}{'10 s':>11}  examples x forward rate" in lines
