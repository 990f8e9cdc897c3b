"""A study model's config.json and shape, found in one documented order (docs/models.md, "Where a model's shape
comes from"); each answer says where it came from.

1. its folder (``models.NAME.path``) or the folder its package ships (``package`` + ``subdir``): config.json there;
2. for a hub model, the local Hugging Face cache at the entry's revision (never downloaded here);
3. the configs ``known_configs.py`` records for the hub models the built-in configs name (a revision has the
   model's architecture);
4. the hub itself, only where the caller allows it (:func:`~.shape.may_ask_hub`: network allowed, the study not
   offline, HF_HUB_OFFLINE unset).

The forecast (its sizes, time and GPU memory), the estimates the run reads (``study/estimates/``) and the config
checks (max_length against the model's positions, a family's attention: ``cards.py``) all ask here:
:func:`find_config`. It reads a config.json once per file version (its path, size and modification time), so a
check that asks again re-derives nothing. (The folder check, ``folder_check.py``, reads the file itself, to say
where a damaged one breaks; the card's job loads it with transformers.)
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.json_files import read_json_object
from .known_configs import KNOWN_CONFIGS, RECORDED
from .locations import model_location
from .shape import ModelShape, hub_config

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FoundConfig:
    """A model's config.json keys and where they come from; ``keys`` None where no source had them, and then
    ``source`` says what was looked at."""

    keys: dict[str, Any] | None
    source: str
    # tokenizer_config.json beside a local config.json ({} where there is none): the tokenizer's own length limit.
    tokenizer_keys: dict[str, Any] = field(default_factory=dict)
    path: str | None = None  # the config.json read, where the keys come from a file here

    @property
    def found(self) -> bool:
        return self.keys is not None

    @property
    def from_local_file(self) -> bool:
        """The keys come from a config.json on this machine (its folder, its package, the hub cache), not from the
        recorded configs or the hub: what the config checks may hold a model to before any job."""
        return self.keys is not None and self.path is not None

    def shape(self) -> ModelShape:
        """The model's shape (models/shape.py); every number None where no config was found."""
        return ModelShape.from_config(self.keys or {}, source=self.source)

    def transformers_config(self) -> Any:
        """The keys as a transformers config of their model type (transformers' defaults for the keys not given)."""
        import transformers
        from transformers import CONFIG_MAPPING, AutoConfig

        keys = dict(self.keys or {})
        if not isinstance(keys.get("model_type"), str):
            raise ValueError(f"{self.path or self.source} names no model_type: give it the model's type as "
                             'transformers names it (e.g. "model_type": "bert")')
        model_type = keys.pop("model_type")
        if model_type not in CONFIG_MAPPING:  # transformers' own error lists every type it knows (hundreds)
            raise ValueError(f"{self.path or self.source}: model_type {model_type!r} is not one transformers "
                             f"{transformers.__version__} knows; give the type transformers names the model by "
                             '(e.g. "bert", "gpt2")')
        return AutoConfig.for_model(model_type, **keys)


def _cached_hub_file(entry: dict[str, Any], filename: str) -> str | None:
    """A file of a hub model from the local Hugging Face cache, or None (never downloads)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(entry["hub"], filename, revision=entry.get("revision"))
    except Exception as exc:  # noqa: BLE001 - an unreadable cache only means the check waits for the job
        log.debug("hub cache lookup of %s/%s failed: %s", entry["hub"], filename, exc)
        return None
    return found if isinstance(found, str) else None


def _local_files(name: str, entry: dict[str, Any]) -> tuple[str | None, str | None, str]:
    """(config.json, tokenizer_config.json, where, in words) of a model entry on this machine; None: not here, and
    then ``where`` is the folder the entry names (its package's where the package is installed)."""
    if entry.get("hub"):
        files = [_cached_hub_file(entry, f) for f in ("config.json", "tokenizer_config.json")]
        return files[0], files[1], "its config.json in the hub cache"
    try:
        folder = Path(model_location(name, entry))
    except Exception:  # noqa: BLE001 - a missing folder or package: the config checks name it, here it is absent
        return None, None, str(entry.get("path") or f"package {entry.get('package')}/{entry.get('subdir')}")
    return str(folder / "config.json"), str(folder / "tokenizer_config.json"), "its config.json"


@functools.lru_cache(maxsize=256)
def _read_version(path: str, size: int, modified_ns: int) -> dict[str, Any] | None:
    """One version of a JSON file, read once (the key holds its size and modification time)."""
    return read_json_object(path)


def read_config_file(path: str | None) -> dict[str, Any] | None:
    """The JSON object in ``path`` (None: no path, no such file, not a JSON object), read once per file version."""
    if path is None:
        return None
    try:
        status = Path(path).stat()
    except OSError:
        return None
    return _read_version(path, status.st_size, status.st_mtime_ns)


def find_config(name: str, entry: dict[str, Any], *, hub_allowed: bool = False) -> FoundConfig:
    """Model ``name``'s config.json keys from the first source that has them, in the order of this module's
    docstring; ``hub_allowed`` lets the last one, the hub, be asked."""
    config_file, tokenizer_file, where = _local_files(name, entry)
    keys = read_config_file(config_file)
    if keys is not None:
        return FoundConfig(dict(keys), where, dict(read_config_file(tokenizer_file) or {}), path=config_file)
    if config_file is not None and Path(config_file).is_file():
        # There, but no JSON object: not "absent", so that no message sends the reader looking for a missing file.
        return FoundConfig(None, f"{config_file} is not a readable JSON object (the config checks say where it "
                                 "breaks)", path=config_file)
    hub = entry.get("hub")
    if hub in KNOWN_CONFIGS:
        return FoundConfig(dict(KNOWN_CONFIGS[hub]), RECORDED)
    if not hub:
        return FoundConfig(None, f"no config.json in {where}")
    if not hub_allowed:
        return FoundConfig(None, f"no config.json of {hub} in the hub cache, and the hub is not asked here (offline, "
                                 "--no-network, or a check before any job)")
    try:
        return FoundConfig(hub_config(hub, entry.get("revision")).to_dict(), "its config.json from the hub")
    except Exception as exc:  # noqa: BLE001 - no network or no such model: not found, and why
        return FoundConfig(None, f"no config.json of {hub} in the hub cache, and the hub did not give it "
                                 f"({type(exc).__name__})")

