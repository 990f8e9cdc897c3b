"""Fine-tuning (workflow_scripts.finetune.training) of a tiny BERT on tiny tasks written here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support.entries import TASKS
from support.tiny_models import save_tiny_model
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.finetune.tables import metrics_table
from workflow_scripts.finetune.task_data import FinetuneError, epoch_batches, load_split, task_texts
from workflow_scripts.finetune.tasks import task_seeds, task_settings
from workflow_scripts.finetune.training import finetune
from workflow_scripts.models.checkpoints import load_checkpoint, read_manifest, write_manifest

WORDS = ["the", "a", "film", "movie", "plot", "actor", "story", "was", "is", "very", "quite", "good", "great", "fine",
         "bad", "awful", "dull", "boring", "fun", "and", "but", "not", "it", "this", "that", "i", "liked", "hated",
         "saw", "man", "dog", "ran", "cat", "sat", "on", "mat"]
SETTINGS = {"epochs": 8, "batch_size": 4, "learning_rate": 2e-3, "warmup_ratio": 0.1, "weight_decay": 0.01,
            "max_grad_norm": 1.0, "max_length": 24, "max_train_examples": None, "max_dev_examples": None,
            "save_steps": [3], "eval_at_checkpoints": True, "device": "cpu",
            "group_by_length": False, "precision": "fp32", "method": "full", "lora_rank": 8, "lora_alpha": 16,
            "lora_dropout": 0.1, "lora_learning_rate": 2e-4}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    """A tiny BERT (2 layers, hidden 32) with its masked-LM head and its own word-level vocabulary, as a pretrained
    checkpoint."""
    root = tmp_path_factory.mktemp("tiny-bert")
    weights = save_tiny_model(root / "model", pieces=["[", "]", ":", ".", *WORDS], masked_lm=True)
    return write_manifest(root / "checkpoints" / "tiny" / "pretrained", model="tiny", name="pretrained",
                          load_from=str(weights))


def sentiment_table(path: Path, n: int, seed: int) -> Path:
    """A learnable single-sentence task: label 1 iff the sentence has a positive word."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = int(i % 2)
        word = rng.choice(["good", "great", "fine"] if label else ["bad", "awful", "dull"])
        rest = list(rng.choice(["the", "film", "plot", "was", "very", "it", "movie", "story"], size=4))
        rows.append({"example_id": i, "source_id": str(i), "text_a": " ".join([*rest[:2], "was", word, *rest[2:]]),
                     "text_b": None, "label": label})
    frame = pd.DataFrame(rows)
    frame["label"] = frame["label"].astype("int64")
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def sst2(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sst2")
    return sentiment_table(root / "train.parquet", 40, 1), sentiment_table(root / "dev.parquet", 16, 2)


def run(pretrained: Path, data: tuple[Path, Path], out: Path, seed: int = 7, task: str = "sst2", **changes):
    settings = {**SETTINGS, **changes}
    return finetune(model_name="tiny", task=TASKS[task], seed=seed, pretrained=pretrained, train_path=data[0],
                    dev_path=data[1], checkpoint_root=out / "checkpoints" / "tiny",
                    metrics_path=out / "finetune" / f"{task}.seed{seed}.metrics.json", settings=settings, threads=1,
                    offline=False, mirror=None)


@pytest.fixture(scope="module")
def first_run(pretrained, sst2, tmp_path_factory):
    out = tmp_path_factory.mktemp("run1")
    return out, run(pretrained, sst2, out)


def weights_of(checkpoint_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(checkpoint_dir / "weights" / "model.safetensors")


def test_checkpoints_and_metrics(first_run):
    out, record = first_run
    root = out / "checkpoints" / "tiny"
    # 40 examples / batch 4 = 10 steps per epoch, 8 epochs: a checkpoint at step 3 and the final one.
    assert record["total_steps"] == 80 and record["steps_per_epoch"] == 10 and record["warmup_steps"] == 8
    for name, step, global_step in (("sst2.seed7.step3", 3, 3), ("sst2.seed7.final", "final", 80)):
        manifest = read_manifest(root / name / "checkpoint.json")
        assert manifest["checkpoint"] == name and manifest["kind"] == "finetuned"
        assert manifest["task"] == "sst2" and manifest["seed"] == 7 and manifest["step"] == step
        assert manifest["global_step"] == global_step
        assert Path(manifest["load_from"]) == (root / name / "weights").resolve()
        assert set(manifest["dev_metrics"]) == {"accuracy"}
    saved = json.loads((out / "finetune" / "sst2.seed7.metrics.json").read_text())
    assert saved["n_train"] == 40 and saved["n_dev"] == 16 and saved["main_metric"] == "accuracy"
    assert saved["majority_baseline"] == {"accuracy": 0.5}
    assert [e["step"] for e in saved["evaluations"]] == [3, "final"]
    assert saved["final"] == saved["evaluations"][-1]["metrics"]
    assert saved["seed"] == 7 and saved["settings"]["learning_rate"] == SETTINGS["learning_rate"]
    # The task is learnable: the tiny model beats the majority baseline.
    assert saved["final"]["accuracy"] > 0.75
    # Downstream (attention stage) loads the fine-tuned encoder like any checkpoint.
    tokenizer, model = load_checkpoint(root / "sst2.seed7.final" / "checkpoint.json", offline=False)
    outputs = model(**tokenizer("the film was good", return_tensors="pt"), output_attentions=True)
    assert len(outputs.attentions) == 2 and outputs.attentions[0].shape[1] == 2


def test_same_seed_is_identical_other_seed_differs(pretrained, sst2, first_run, tmp_path):
    out1, record1 = first_run
    record2 = run(pretrained, sst2, tmp_path / "again")
    record3 = run(pretrained, sst2, tmp_path / "other", seed=8)
    assert record2["evaluations"] == record1["evaluations"]
    assert record2["epoch_loss"] == record1["epoch_loss"]
    w1 = weights_of(out1 / "checkpoints" / "tiny" / "sst2.seed7.final")
    w2 = weights_of(tmp_path / "again" / "checkpoints" / "tiny" / "sst2.seed7.final")
    w3 = weights_of(tmp_path / "other" / "checkpoints" / "tiny" / "sst2.seed8.final")
    assert w1.keys() == w2.keys() and all(np.array_equal(w1[k].numpy(), w2[k].numpy()) for k in w1)
    assert record3["epoch_loss"] != record1["epoch_loss"]
    assert not all(np.array_equal(w1[k].numpy(), w3[k].numpy()) for k in w1)


def test_regression_pair_task_and_table(pretrained, first_run, tmp_path):
    rng = np.random.default_rng(3)
    frames = []
    for n in (24, 10):
        a = [" ".join(rng.choice(WORDS, 5)) for _ in range(n)]
        frames.append(pd.DataFrame({"example_id": range(n), "source_id": [str(i) for i in range(n)],
                                    "text_a": a, "text_b": [t[::-1] for t in a],
                                    "label": rng.uniform(0, 5, n).astype("float64")}))
    paths = []
    for frame, name in zip(frames, ("train", "dev")):
        paths.append(tmp_path / f"{name}.parquet")
        frame.to_parquet(paths[-1], index=False)
    record = run(pretrained, tuple(paths), tmp_path, task="stsb", epochs=1, save_steps=[], max_train_examples=16,
                 group_by_length=True)
    assert record["n_train"] == 16 and record["n_train_available"] == 24 and record["total_steps"] == 4
    assert set(record["final"]) == {"pearson", "spearman"}
    assert all(math.isnan(v) for v in record["majority_baseline"].values())
    table = metrics_table([first_run[0] / "finetune" / "sst2.seed7.metrics.json",
                           tmp_path / "finetune" / "stsb.seed7.metrics.json"], tmp_path / "table.csv")
    written = pd.read_csv(tmp_path / "table.csv")
    assert list(written.columns)[:7] == ["model", "task", "seed", "step", "metric", "value", "n_dev"]
    assert len(table) == 2 + 2  # sst2: step3 + final accuracy; stsb: final pearson + spearman
    assert set(written["step"].astype(str)) == {"3", "final"}


def test_bad_labels_are_rejected_with_their_row(tmp_path):
    frame = pd.DataFrame({"example_id": range(10, 20), "text_a": ["a"] * 10, "text_b": ["b"] * 10,
                          "label": [0, 1, 1, 0, 1, 0, 0, 2, 1, 0]})
    frame.to_parquet(tmp_path / "rte.parquet")
    with pytest.raises(InputFormatError, match=r"row 7 \(counting from 0; example_id 17\): label 2 is not one of "
                                               r"0 \(entailment\), 1 \(not_entailment\)"):
        load_split(tmp_path / "rte.parquet", TASKS["rte"], "train")
    frame["label"] = [0.0, 1.0, float("nan"), 0, 1, 0, 0, 1, 1, 0]
    frame.to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(InputFormatError, match="row 2 "):
        load_split(tmp_path / "nan.parquet", TASKS["rte"], "train")
    frame["label"] = [0.0, 1.5, 5.0, 7.5, 1, 0, 0, 1, 1, 0]
    frame.to_parquet(tmp_path / "stsb.parquet")
    with pytest.raises(InputFormatError, match=r"row 3 .*similarity score in \[0, 5\]"):
        load_split(tmp_path / "stsb.parquet", TASKS["stsb"], "train")


def test_missing_split_names_task_and_files(tmp_path):
    with pytest.raises(FinetuneError) as info:
        load_split(tmp_path / "data" / "qnli" / "train.parquet", TASKS["qnli"], "train", mirror=tmp_path / "mirror")
    message = str(info.value)
    assert "task 'qnli'" in message and str(tmp_path / "data" / "qnli" / "train.parquet") in message
    assert f"mirror: {tmp_path / 'mirror'}" in message


def test_save_step_after_the_end_is_an_error(pretrained, sst2, tmp_path):
    with pytest.raises(FinetuneError, match=r"save step\(s\) \[500\] come after the last step \(80"):
        run(pretrained, sst2, tmp_path, save_steps=[500])


def test_gpu_out_of_memory_names_the_settings(pretrained, sst2, tmp_path, monkeypatch):
    import torch

    import workflow_scripts.finetune.training as ft

    def out_of_memory(**kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(ft, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(ft, "_finetune", out_of_memory)
    with pytest.raises(FinetuneError,
                       match=r"batch_size=4 and max_length=24 .*lower batch_size first, then max_length"):
        run(pretrained, sst2, tmp_path)


def test_task_settings_per_task_override():
    config = {"seeds": [1, 2], "per_task": {"cola": {"learning_rate": 5e-5, "seeds": [3], "save_steps": [20, 10]}},
              "wic_marking": "brackets", **{k: v for k, v in SETTINGS.items() if k != "max_length"},
              "max_length": None}
    cola, rte = task_settings(config, "cola", 96), task_settings(config, "rte", 96)
    assert cola["learning_rate"] == 5e-5 and rte["learning_rate"] == SETTINGS["learning_rate"]
    assert cola["save_steps"] == [10, 20] and cola["max_length"] == 96
    assert "wic_marking" not in cola
    assert task_settings(config, "wic", marks_target_word=True)["wic_marking"] == "brackets"
    assert "seeds" not in cola and task_seeds(config, "cola") == [3] and task_seeds(config, "rte") == [1, 2]


def test_wic_marking():
    frame = pd.DataFrame({"text_a": ["You must carry your gear ."], "text_b": ["Sound carries well ."],
                          "word": ["carry"], "word_index_a": [2], "word_index_b": [1], "label": [0]})
    assert task_texts(frame, TASKS["wic"], "brackets") == (["You must [ carry ] your gear ."],
                                                    ["Sound [ carries ] well ."])
    assert task_texts(frame, TASKS["wic"], "prefix") == (["carry: You must carry your gear ."],
                                                      ["Sound carries well ."])
    assert task_texts(frame, TASKS["wic"], "none") == (["You must carry your gear ."], ["Sound carries well ."])
    frame["word_index_b"] = [9]
    with pytest.raises(InputFormatError, match="row 0 .*word_index_b=9"):
        task_texts(frame, TASKS["wic"], "brackets")


def test_group_by_length_batches():
    import torch

    lengths = np.random.default_rng(0).integers(3, 60, size=1000)
    plain = epoch_batches(lengths, 8, torch.Generator().manual_seed(1), False)
    grouped = epoch_batches(lengths, 8, torch.Generator().manual_seed(1), True)
    assert len(plain) == len(grouped) == 125
    assert sorted(np.concatenate(grouped).tolist()) == list(range(1000))  # every example once
    spread = [np.ptp(lengths[b]) for b in grouped]
    assert np.mean(spread) < 0.25 * np.mean([np.ptp(lengths[b]) for b in plain])
    again = epoch_batches(lengths, 8, torch.Generator().manual_seed(1), True)
    assert all(np.array_equal(a, b) for a, b in zip(grouped, again))


def test_precision(pretrained, sst2, first_run, tmp_path):
    """tf32 is fp32 on a CPU (TensorFloat-32 is a GPU's); bf16 runs the passes under bfloat16 autocast: the same run
    within bfloat16's precision, not the same floats. The weights stay float32 either way."""
    _, fp32 = first_run
    tf32 = run(pretrained, sst2, tmp_path / "tf32", precision="tf32")
    assert tf32["epoch_loss"] == fp32["epoch_loss"] and tf32["settings"]["precision"] == "tf32"
    bf16 = run(pretrained, sst2, tmp_path / "bf16", precision="bf16")
    assert bf16["epoch_loss"] != fp32["epoch_loss"]
    assert np.allclose(bf16["epoch_loss"], fp32["epoch_loss"], rtol=0.05)
    weights = weights_of(tmp_path / "bf16" / "checkpoints" / "tiny" / "sst2.seed7.final")
    assert {str(w.dtype) for w in weights.values()} == {"torch.float32"}


def test_a_diverging_loss_names_its_step(pretrained, sst2, tmp_path):
    # The losses are read from the device only at a log line, a checkpoint or the epoch's end: the error still
    # names the first step whose loss was not finite.
    with pytest.raises(FinetuneError, match=r"training loss became (nan|inf) at step \d+; lower learning_rate"):
        run(pretrained, sst2, tmp_path, learning_rate=1e12, max_grad_norm=None, save_steps=[])


def test_settings_are_checked_against_the_schema(pretrained, sst2, tmp_path):
    misspelt = {**{k: v for k, v in SETTINGS.items() if k != "precision"}, "precison": "bf16"}
    with pytest.raises(FinetuneError, match=r"task 'sst2': fine-tuning settings: precison: not a run setting of "
                                            r"the config schema's 'finetune' section .*; precision: missing"):
        finetune(model_name="tiny", task=TASKS["sst2"], seed=7, pretrained=pretrained, train_path=sst2[0],
                 dev_path=sst2[1], checkpoint_root=tmp_path, metrics_path=tmp_path / "m.json", settings=misspelt,
                 threads=1, offline=False, mirror=None)
    with pytest.raises(FinetuneError, match=r"fine-tuning setting precision: 'fp16' is not one of"):
        run(pretrained, sst2, tmp_path, precision="fp16")


def test_lora_trains_low_rank_updates_and_saves_the_merged_model(pretrained, sst2, first_run, tmp_path):
    """finetune.method lora: the query and value projections change by a matrix of rank at most r, every other
    pretrained weight is as it was, and the checkpoint is an ordinary one (no adapter keys, the full run's files)."""
    from safetensors.torch import load_file

    from workflow_scripts.models.checkpoints import read_manifest as read

    record = run(pretrained, sst2, tmp_path, method="lora", lora_rank=2, lora_alpha=4, lora_dropout=0.0,
                 lora_learning_rate=1e-2)
    assert record["trained_parameters"] < record["parameters"] / 3
    assert record["epoch_loss"][-1] < record["epoch_loss"][0]
    out, _ = first_run
    full = weights_of(out / "checkpoints" / "tiny" / "sst2.seed7.final")
    for name in ("sst2.seed7.step3", "sst2.seed7.final"):
        lora = weights_of(tmp_path / "checkpoints" / "tiny" / name)
        assert set(lora) == set(full), "the merged checkpoint has the full fine-tuning's keys, no adapter's"
    base = load_file(Path(read(pretrained)["load_from"]) / "model.safetensors")
    changed = set()
    for key, value in lora.items():
        if key in base:
            delta = (value - base[key]).double()
            if delta.abs().max() > 0:
                changed.add(key.rsplit(".", 2)[-2])
                assert int(torch_rank(delta)) <= 2, key
    assert changed == {"query", "value"}, changed


def torch_rank(matrix):
    import torch

    return torch.linalg.matrix_rank(matrix, atol=1e-6)


def test_lora_is_refused_for_a_family_without_targets(pretrained, sst2, tmp_path, monkeypatch):
    import workflow_scripts.finetune.lora as lora
    from workflow_scripts.models.families import GENERIC

    monkeypatch.setattr(lora, "family_of", lambda model_type: GENERIC)
    with pytest.raises(FinetuneError, match=r"method 'lora' adapts the attention projections .* model type 'bert' "
                                            r"has none .*Use method 'full'"):
        run(pretrained, sst2, tmp_path, method="lora")
