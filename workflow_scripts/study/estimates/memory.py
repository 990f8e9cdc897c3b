"""What a study's GPU jobs need of a GPU's memory, estimated before any job from each model's shape and the
settings of the jobs that run it (docs/configuration.md, "GPU memory"). With ``gpu_memory_gb`` set, a study with a
job above it is refused by the config checks, naming the job, the model, the estimate and its fixes; the plan
(python -m workflow_scripts.study.forecast) prints every model's estimates.

Per job, the largest of its parts held at once:

- weights: parameters x the bytes of their type (models.NAME.dtype for extraction, float32 for fine-tuning and
  head disabling, which load float32 weights);
- fine-tuning, full: 16 bytes per parameter (float32 weights, gradients and AdamW's two moments); LoRA: the
  float32 frozen weights (4 bytes), and 16 bytes per trained parameter (the low-rank updates of the family's
  target projections, and the classifier);
- training activations: per layer s b h (34 + 5 a s / h) bytes at 16 bits (Korthikanti et al. 2022, eq. 1: the
  tensors a transformer layer keeps for its backward pass), doubled for float32 (precision fp32, tf32);
- extraction: the weights, every layer's attention maps of the largest batch (b x heads x s^2 each, in the
  weights' type, as the model returns them) plus their float16 copy, and one layer's activations;
- head disabling: the float32 classifier and one layer's activations and maps at ablation.batch_size.

Every estimate adds OVERHEAD_BYTES (the CUDA context, cuBLAS workspaces, the caching allocator's slack). The
largest batch is the one the settings allow: batch_size inputs at max_length (extraction: at most max_batch_tokens
tokens).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.sizes import GIGABYTES, size_text
from ...models.shape import ModelShape

log = logging.getLogger(__name__)

BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
FULL_FINETUNE_BYTES = 16
OVERHEAD_BYTES = 1.5e9
GB = 1e9


def gigabytes(n: float) -> str:
    """Bytes in GB, whatever their size: the estimates of a model's jobs compare at a glance."""
    return size_text(n, GIGABYTES)


@dataclass
class Estimate:
    job: str
    model: str
    bytes: float
    parts: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        parts = ", ".join(f"{name} {gigabytes(value)}" for name, value in self.parts.items())
        return f"{gigabytes(self.bytes)} ({parts}, overhead {gigabytes(OVERHEAD_BYTES)})"


def shape_of(config: Any) -> ModelShape:
    """A model's shape (models/shape.py) from its transformers config, with its parameters counted on the meta
    device (no memory, no weights) and the parameters LoRA would train per unit of rank in its family's target
    projections."""
    import torch

    from ...models.families import family_of, from_config

    with torch.device("meta"):
        model = from_config("base", config)
    targets = family_of(config.model_type).lora_targets
    per_rank = sum(module.in_features + module.out_features for name, module in model.named_modules()
                   if name.rsplit(".", 1)[-1] in targets and hasattr(module, "in_features"))
    per_rank += sum(sum(module.weight.shape) for name, module in model.named_modules()  # GPT-2's Conv1D
                    if name.rsplit(".", 1)[-1] in targets and not hasattr(module, "in_features"))
    parameters = sum(p.numel() for p in model.parameters())
    return replace(ModelShape.from_config(config), parameters=parameters, lora_parameters_per_rank=per_rank)


def classifier_parameters(shape: ModelShape) -> int:
    """The parameters of a two-label classifier head on the model (trained whole under LoRA): its dense layer and
    its output, weights only."""
    return shape.hidden * shape.hidden + 2 * shape.hidden


def training_activations(shape: ModelShape, batch: int, length: int, precision: str) -> float:
    per_layer = length * batch * shape.hidden * (34 + 5 * shape.heads * length / shape.hidden)
    return shape.layers * per_layer * (1 if precision == "bf16" else 2)


def finetune_estimate(model: str, task: str, shape: ModelShape, settings: Any) -> Estimate:
    length, batch = int(settings["max_length"]), int(settings["batch_size"])
    if settings["method"] == "lora":
        trained = shape.lora_parameters_per_rank * int(settings["lora_rank"]) + classifier_parameters(shape)
        parts = {"frozen float32 weights": 4.0 * shape.parameters,
                 "LoRA updates, gradients, AdamW states": FULL_FINETUNE_BYTES * trained}
    else:
        parts = {"weights, gradients, AdamW states": float(FULL_FINETUNE_BYTES * shape.parameters)}
    parts["activations"] = training_activations(shape, batch, length, settings["precision"])
    return Estimate(f"finetune_{task}", model, sum(parts.values()) + OVERHEAD_BYTES, parts)


def forward_parts(shape: ModelShape, weights: str, batch: int, length: int) -> dict[str, float]:
    size = BYTES[weights]
    return {"weights": float(shape.parameters * size),
            "one layer's activations": batch * length * (4 * shape.hidden) * 4.0 * size}


def extraction_estimate(model: str, shape: ModelShape, attention: dict[str, Any], length: int,
                        dtype: str) -> Estimate:
    batch = max(1, min(int(attention["batch_size"]), int(attention["max_batch_tokens"]) // length))
    parts = forward_parts(shape, dtype, batch, length)
    parts["attention maps"] = shape.layers * batch * shape.heads * length ** 2 * (BYTES[dtype] + 2.0)
    return Estimate("extract_attention", model, sum(parts.values()) + OVERHEAD_BYTES, parts)


def disabling_estimate(model: str, shape: ModelShape, ablation: dict[str, Any], length: int) -> Estimate:
    batch = int(ablation["batch_size"])
    parts = forward_parts(shape, "float32", batch, length)
    parts["one layer's attention maps"] = batch * shape.heads * length ** 2 * 4.0
    return Estimate("head_disabling", model, sum(parts.values()) + OVERHEAD_BYTES, parts)


def gpu_estimates(config: dict[str, Any], model: str, shape: ModelShape, tasks: list[str], ablated: list[str]
                  ) -> list[Estimate]:
    """Every GPU job kind of ``model`` in the study whose device may be a GPU (auto or cuda): fine-tuning per task,
    extraction, head disabling."""
    from ...finetune.tasks import task_settings

    entry = config["models"][model]
    estimates = []
    for task in tasks:
        settings = task_settings(config["finetune"], task, entry["max_length"], marks_target_word=task == "wic")
        if settings["device"] != "cpu":
            estimates.append(finetune_estimate(model, task, shape, settings))
    if config["attention"]["device"] != "cpu":
        estimates.append(extraction_estimate(model, shape, config["attention"], entry["max_length"],
                                             entry["dtype"]))
    if ablated and config["ablation"]["device"] != "cpu":
        estimates.append(disabling_estimate(model, shape, config["ablation"], entry["max_length"]))
    return estimates


def model_config(name: str, entry: dict[str, Any], *, hub_allowed: bool = False) -> tuple[Any | None, str]:
    """A model's transformers config and where it comes from (models/model_config.py: its local config.json, the
    recorded configs, the hub where ``hub_allowed``), or None and why (no source has it; a config.json
    transformers cannot read, named)."""
    from ...models.model_config import find_config

    found = find_config(name, entry, hub_allowed=hub_allowed)
    if not found.found:
        return None, found.source
    try:
        return found.transformers_config(), found.source
    except ValueError as exc:  # a config.json without a model type: its jobs are not estimated, and why
        return None, str(exc)


def study_estimates(config: dict[str, Any]) -> tuple[dict[str, tuple[ModelShape, list[Estimate]]], list[str]]:
    """Each study model's shape and GPU job estimates, and the models whose shape is not known here."""
    tasks = config["finetune"]["tasks"]
    tasks = list(config["study"]["tasks"] if tasks is None else tasks)
    ablated = config["ablation"]["tasks"]
    ablated = [t for t in (tasks if ablated is None else ablated) if t in tasks]
    found, unknown = {}, []
    for name in config["study"]["models"]:
        model_config_, why = model_config(name, config["models"][name])
        if model_config_ is None:
            unknown.append(f"{name} ({why})")
            continue
        try:
            shape = shape_of(model_config_)
        except Exception as exc:  # noqa: BLE001 - a config transformers cannot build here: named, not estimated
            unknown.append(f"{name} ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        found[name] = (shape, gpu_estimates(config, name, shape, tasks, ablated))
    return found, unknown


def gpu_memory_problems(config: dict[str, Any]) -> list[str]:
    """The config checks' problems: every GPU job estimated above ``gpu_memory_gb`` (none when it is null)."""
    from ...finetune.tasks import task_settings

    limit = config.get("gpu_memory_gb")
    if not limit:
        return []
    found, unknown = study_estimates(config)
    if unknown:
        log.warning("gpu_memory_gb: the GPU memory of %s is not estimated: their jobs are not checked",
                    ", ".join(unknown))
    problems = []
    for name, (shape, estimates) in found.items():
        for estimate in estimates:
            if estimate.bytes > limit * GB:
                task = estimate.job.removeprefix("finetune_")
                settings = (task_settings(config["finetune"], task, config["models"][name]["max_length"],
                                          marks_target_word=task == "wic") if estimate.job.startswith("finetune_")
                            else None)
                problems.append(refusal(estimate, limit, shape, settings))
    return problems


def refusal(estimate: Estimate, limit_gb: float, shape: ModelShape, settings: dict[str, Any] | None) -> str:
    """The config problem of an estimate above the declared GPU memory: the job, model, estimate, limit, fixes."""
    fixes = []
    if estimate.job.startswith("finetune_"):
        if settings and settings["method"] != "lora" and shape.lora_parameters_per_rank:  # its family has targets
            lora = finetune_estimate(estimate.model, estimate.job.removeprefix("finetune_"), shape,
                                     {**settings, "method": "lora"})
            fixes.append(f"finetune.method: lora (about {gigabytes(lora.bytes)})")
        if settings and settings["precision"] != "bf16":
            fixes.append("finetune.precision: bf16 (halves the activations)")
        fixes.append("a lower finetune.batch_size or finetune.max_length")
    elif estimate.job == "extract_attention":
        fixes += [f"models.{estimate.model}.dtype: bfloat16 (halves the weights and the maps)",
                  "a lower attention.batch_size or attention.max_batch_tokens", f"a lower models.{estimate.model}."
                  "max_length"]
    else:
        fixes += ["a lower ablation.batch_size", "ablation.device: cpu"]
    return (f"job {estimate.job} of model {estimate.model!r} needs about {estimate.describe()} of GPU memory, more "
            f"than gpu_memory_gb {limit_gb:g}; fixes: {'; '.join(fixes)}")


def scaled_rates(config: dict[str, Any], model: str, given: Any) -> dict[str, Any]:
    """Rates measured on a model of ``given.params`` parameters, scaled to ``model``'s parameters: a transformer's
    compute per token is about twice its parameters (its attention's T^2 term aside, small at 128 tokens)."""
    model_config_, why = model_config(model, config["models"][model])
    if model_config_ is None:
        return {"not_timed": f"{why}: its size is unknown"}
    factor = shape_of(model_config_).parameters / given.params
    return {"forward": given.forward * factor, "train": given.train * factor,
            "how": f"given with --rate for {given.params:.3g} parameters, scaled by {factor:.3g} to this model's"}


def memory_summary(config: dict[str, Any]) -> dict[str, Any]:
    """The plan's GPU memory part, as plain data: per model its parameters and each GPU job's estimate."""
    found, unknown = study_estimates(config)
    return {"limit_gb": config["gpu_memory_gb"], "unknown": unknown,
            "models": {name: {"parameters": shape.parameters,
                              "jobs": {e.job: {"bytes": e.bytes, "parts": e.parts} for e in estimates}}
                       for name, (shape, estimates) in found.items()}}


def memory_lines(summary: dict[str, Any], took: dict[str, str] | None = None) -> list[str]:
    """The plan's text of it: a line per model, fine-tuning at its largest task, and the model's time where the
    plan estimated it (``took``: its passes at its rates, in words)."""
    limit = summary["limit_gb"]
    lines = ["Per model: parameters, estimated time of its passes (above), and GPU memory per job: the largest "
             "batch's peak from the model's shape (study/estimates/memory.py), "
             + (f"against gpu_memory_gb {limit:g}:" if limit else "no limit declared (gpu_memory_gb):")]
    for name, model in summary["models"].items():
        jobs = model["jobs"]
        tuning = max((job for job in jobs if job.startswith("finetune_")), key=lambda job: jobs[job]["bytes"],
                     default=None)
        shown = [(f"fine-tuning {gigabytes(jobs[tuning]['bytes'])} ({tuning.removeprefix('finetune_')})", tuning)
                 ] if tuning else []
        shown += [(f"{label} {gigabytes(jobs[job]['bytes'])}", job) for label, job in
                  (("extraction", "extract_attention"), ("head disabling", "head_disabling")) if job in jobs]
        over = [job for _, job in shown if limit and jobs[job]["bytes"] > limit * GB]
        time = f", {took[name]}" if took and name in took else ""
        jobs_text = ", ".join(text for text, _ in shown) or "no GPU job"
        lines.append(f"  {name} ({model['parameters'] / 1e9:.2f} B parameters{time}): {jobs_text}"
                     + (" -- over the limit" if over else ""))
    if summary["unknown"]:
        lines.append(f"  not estimated: {', '.join(summary['unknown'])}")
    return lines
