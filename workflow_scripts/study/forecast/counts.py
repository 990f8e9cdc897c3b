"""The examples a study passes through its models, per model and in all (plan.py prints them; timing.py
multiplies them by each model's rates): extraction, fine-tuning (training and dev scoring), the
separator gradient and the causal head checks, the only jobs that run a study model (probes and the pattern CNN
train on stored maps, annotation runs its own tagger)."""

from __future__ import annotations

from typing import Any

from ...core.subjects import base_model
from ...models.checkpoints import parse_checkpoint_name
from ...models.shape import ModelShape
from ..estimates.sizes import DumpSize, split_size
from ..model import Study

# What forward_passes counts per model; timing.ESTIMATE_LINES multiplies each by a rate.
PASS_COUNTS = ("extraction", "finetune_train", "finetune_dev", "gradient", "ablation_disabling",
               "ablation_found_heads_at_most")


def forward_passes(study: Study, dumps: list[DumpSize], shapes: dict[str, ModelShape]) -> dict[str, Any]:
    """Examples passed through the study's models, in all and per model (``per_model``), and the sizes not known
    (``unknown``: not counted)."""
    per_model = {model: dict.fromkeys(PASS_COUNTS, 0) for model in study.models}
    unknown: list[str] = [f"{d.corpus}/{d.split}" for d in dumps if d.examples is None]
    for d in dumps:
        per_model[base_model(d.model)]["extraction"] += d.examples or 0
    for model, task, _seed in study.finetune.runs:
        settings = study.finetune_settings(task, model)
        n_train = split_size(study, task, "train")[0]
        n_dev = split_size(study, task, study.dev_split(task))[0]
        if n_train is None or n_dev is None:
            unknown.append(task)
            continue
        counts = per_model[model]
        counts["finetune_train"] += min(n_train, settings["max_train_examples"] or n_train) * settings["epochs"]
        scorings = 1 + (len(settings["save_steps"]) if settings["eval_at_checkpoints"] else 0)
        counts["finetune_dev"] += min(n_dev, settings["max_dev_examples"] or n_dev) * scorings
    bound = gradient_passes(study, dumps, shapes, per_model)
    ablation_passes(study, shapes, unknown, per_model)
    totals = {count: sum(counts[count] for counts in per_model.values()) for count in PASS_COUNTS}
    return {**totals, "gradient_is_bound": bound, "unknown": sorted(set(unknown)), "per_model": per_model}


def gradient_passes(study: Study, dumps: list[DumpSize], shapes: dict[str, ModelShape],
                    per_model: dict[str, dict[str, int]]) -> bool:
    """Adds to ``per_model`` the examples of the separator gradient (surface.gradient_examples per checkpoint with
    a masked-LM head); True where a pretrained model's head is not known, so that the count is a bound."""
    surface, bound = study.config["surface"], False
    for model, checkpoint in study.surface.gradient_pairs:
        info = parse_checkpoint_name(checkpoint)
        # Skipped without a loss: the random-init control never has a masked-LM head, a pretrained model
        # saved without one (a sentence encoder) neither; a fine-tuned one scores its task's dev examples.
        if info["kind"] == "random" or (info["kind"] == "pretrained" and shapes[model].mlm_head is False):
            continue
        bound |= info["kind"] == "pretrained" and shapes[model].mlm_head is None
        if info["kind"] == "finetuned":
            corpus, split = info["task"], study.dev_split(info["task"])
        else:
            corpus, split = surface["corpus"], surface["split"]
        n = next((d.examples for d in dumps if (d.model, d.corpus, d.split) == (model, corpus, split)), None)
        n = n if n is not None else (split_size(study, corpus, split)[0] or 0)
        per_model[base_model(model)]["gradient"] += min(n, surface["gradient_examples"] or n)
    return bound


def ablation_passes(study: Study, shapes: dict[str, ModelShape], unknown: list[str],
                    per_model: dict[str, dict[str, int]]) -> None:
    """Adds to ``per_model`` the examples the causal head checks pass through fine-tuned and pretrained models
    (docs/ablation.md): head disabling scores each run's first dev examples once plainly and once per head and
    mode; the found heads (at most two per relation of syntax.relations, and two for coreference) are each
    ablated per mode over the score split (the probe) and the ablated tasks' dev examples. Unknown sizes go to
    ``unknown``."""
    ablation, syntax = study.config["ablation"], study.config["syntax"]
    modes = len(ablation["modes"])
    for model, task, _seed in study.ablation.disabling_runs:
        n_dev = split_size(study, task, study.dev_split(task))[0]
        shape = shapes[model].layers_heads
        if n_dev is None or shape is None:
            unknown.append(f"ablation of {task}")
            continue
        max_dev = study.finetune_settings(task, model)["max_dev_examples"]
        capped = min(n_dev, max_dev or n_dev, ablation["max_examples"])
        per_model[model]["ablation_disabling"] += capped * (1 + shape[0] * shape[1] * modes)
    heads = 2 * (len(syntax["relations"]) + (1 if study.syntax.coref_pairs else 0))
    for model in study.ablation.found_heads_models:
        n_score = split_size(study, study.syntax_treebank, syntax["score_split"])[0]
        if n_score is None:
            unknown.append(f"found heads on {study.syntax_treebank}/{syntax['score_split']}")
            continue
        found = n_score * (1 + heads * modes)
        for task, _seed in [(t, s) for m, t, s in study.ablation.disabling_runs if m == model]:
            n_dev = split_size(study, task, study.dev_split(task))[0] or 0
            found += min(n_dev, ablation["max_examples"]) * (1 + heads * modes)
        per_model[model]["ablation_found_heads_at_most"] += found
