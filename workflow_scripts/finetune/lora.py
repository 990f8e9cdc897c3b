"""LoRA fine-tuning (``finetune.method: lora``; Hu et al. 2022, through peft): low-rank updates of the attention
projections the model's family declares (``Family.lora_targets`` in models/families.py), the classifier trained
whole, the rest frozen. A 7-8B model then trains with its frozen weights' memory and the updates' gradients and
AdamW states, not 16 bytes per parameter.

Every checkpoint the run saves is the **merged** model: each update added into its weight (W + B A alpha / r), a
plain transformers model of the same architecture and files as full fine-tuning saves, so that the later stages
([K]'s change per head, [L]'s pattern classes, dumps, head disabling) read it unchanged.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..models.families import FAMILIES, family_of
from .task_data import FinetuneError
from .tasks import RunSettings


def with_lora(model: Any, settings: RunSettings, task: str) -> Any:
    """``model`` (a sequence classifier) wrapped with LoRA updates of its family's attention projections."""
    from peft import LoraConfig, TaskType, get_peft_model

    family = family_of(model.config.model_type)
    if not family.lora_targets:
        known = sorted(t for f in FAMILIES if f.lora_targets for t in f.model_types)
        raise FinetuneError(f"task {task!r}: finetune.method 'lora' adapts the attention projections a model family "
                            f"declares; model type {model.config.model_type!r} has none (declared for "
                            f"{', '.join(known)}). Use method 'full', or declare lora_targets for the family in "
                            "workflow_scripts/models/families.py")
    # Only the head layers this model has (ELECTRA's classifier has no pooler, BERT's has).
    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    whole = [name for name in family.lora_trained_whole if name in present]
    config = LoraConfig(task_type=TaskType.SEQ_CLS, r=settings.lora_rank, lora_alpha=settings.lora_alpha,
                        lora_dropout=settings.lora_dropout, target_modules=list(family.lora_targets),
                        modules_to_save=whole or None)
    with warnings.catch_warnings():
        # peft asks transformers about gradient checkpointing by a name transformers 5 deprecates: not the user's
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return get_peft_model(model, config)


def is_lora(model: Any) -> bool:
    return hasattr(model, "merge_and_unload")


@contextmanager
def merged(model: Any, *, last: bool) -> Iterator[Any]:
    """The model to save: itself for full fine-tuning; for LoRA, its updates merged into the weights, as a plain
    transformers model. The last checkpoint merges in place. One before the end merges a copy, made in host memory
    (a second copy of a 7-8 B model's weights would not fit beside the first on the GPU): the model waits there while
    the copy is saved, and training goes on with the updates apart."""
    if not is_lora(model):
        yield model
        return
    if last:
        yield model.merge_and_unload()
        return
    device = next(model.parameters()).device
    model.to("cpu")
    try:
        yield copy.deepcopy(model).merge_and_unload()
    finally:
        model.to(device)


def trainable_share(model: Any) -> tuple[int, int]:
    """(trained parameters, all parameters)."""
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trained, sum(p.numel() for p in model.parameters())
