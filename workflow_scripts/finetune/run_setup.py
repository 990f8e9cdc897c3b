"""Setting up a fine-tuning run (training.py): the pretrained model with its task head, the run's count of steps,
and the optimizer with its learning-rate schedule.

training._finetune calls these in the order a run has always taken, so that the seeded global generator is drawn
from in the same order (the head's initialisation, LoRA's updates) and a seed gives the same run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..data.entries import TaskSpec
from ..models.cards import length_excess, position_limit
from ..models.families import ensure_pad_token, load_pretrained
from .lora import with_lora
from .task_data import FinetuneError
from .tasks import RunSettings


@dataclass(frozen=True)
class StepPlan:
    """A run's optimizer steps: how many, how many warm up the learning rate, and after which ones to save."""

    batch_size: int
    steps_per_epoch: int
    total_steps: int
    warmup_steps: int
    save_steps: list[int]


def load_model(model_name: str, spec: TaskSpec, manifest: dict[str, Any], settings: RunSettings,
               offline: bool) -> tuple[Any, Any]:
    """The model and tokenizer of the pretrained checkpoint whose ``checkpoint.json`` is ``manifest``, with a
    new sequence-classification head for ``spec``'s labels (one regression output where it has none), wrapped with
    LoRA's updates where the method is ``lora``. A ``max_length`` beyond the model's positions is an error here."""
    import torch
    from transformers import AutoTokenizer

    task = spec.name
    load_kwargs: dict[str, Any] = {"local_files_only": offline}
    if manifest.get("revision"):
        load_kwargs["revision"] = manifest["revision"]
    names = spec.labels
    head: dict[str, Any] = ({"num_labels": 1, "problem_type": "regression"} if names is None else
                            {"num_labels": len(names), "problem_type": "single_label_classification",
                             "id2label": {i: str(n) for i, n in enumerate(names)},
                             "label2id": {str(n): i for i, n in enumerate(names)}})
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **load_kwargs)
    # The head is initialised from the seed (make_deterministic seeded the global generator).
    # float32 weights whatever the checkpoint stores (transformers would keep a bfloat16 checkpoint's type): AdamW's
    # states and updates, and the precision option's autocast, assume them.
    model = load_pretrained("classifier", manifest["load_from"], **head, **load_kwargs, dtype=torch.float32)
    ensure_pad_token(model, tokenizer)  # a decoder pads with its end-of-text token (saved with the checkpoint)
    # Before training, not a tensor-size error mid-epoch: the config check before the jobs reads a
    # model's limit from local files, and a hub model not yet in the cache has none there.
    limit = position_limit(model.config.to_dict(), tokenizer.model_max_length)
    excess = length_excess(settings["max_length"], model_name, limit)
    if excess and limit:
        raise FinetuneError(f"task {task!r}: max_length: {excess}; give at most {limit[0]}")
    if settings.method == "lora":
        model = with_lora(model, settings, task)
    return model, tokenizer


def plan_steps(task: str, n_train: int, settings: RunSettings) -> StepPlan:
    """The steps of a run over ``n_train`` training examples; a save step after the last step is an error, raised
    before any training."""
    batch_size = int(settings["batch_size"])
    steps_per_epoch = math.ceil(n_train / batch_size)
    total_steps = steps_per_epoch * int(settings["epochs"])
    warmup_steps = math.ceil(settings["warmup_ratio"] * total_steps)
    save_steps = [int(s) for s in settings["save_steps"]]
    too_late = [s for s in save_steps if s > total_steps]
    if too_late:
        raise FinetuneError(
            f"task {task!r}: save step(s) {too_late} come after the last step ({total_steps} = {steps_per_epoch} "
            f"steps/epoch x {settings['epochs']} epochs on {n_train} examples); lower save_steps, or train "
            "for more epochs")
    return StepPlan(batch_size=batch_size, steps_per_epoch=steps_per_epoch, total_steps=total_steps,
                    warmup_steps=warmup_steps, save_steps=save_steps)


def make_optimizer(model: Any, settings: RunSettings, device: str, steps: StepPlan) -> tuple[Any, Any]:
    """AdamW over the trained parameters (no weight decay on biases and norms' weights) and its linear warm-up and
    decay schedule."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight", "layernorm.weight", "norm.weight")
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]  # LoRA: the updates, the head
    groups = [
        {"params": [p for n, p in trainable if not n.endswith(no_decay)], "weight_decay": settings["weight_decay"]},
        {"params": [p for n, p in trainable if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    # On a GPU, AdamW's fused kernel: one launch for all the parameters, not several per tensor.
    optimizer = torch.optim.AdamW(groups, lr=settings.peak_learning_rate,
                                  fused=True if device.startswith("cuda") else None)
    scheduler = get_linear_schedule_with_warmup(optimizer, steps.warmup_steps, steps.total_steps)
    return optimizer, scheduler
