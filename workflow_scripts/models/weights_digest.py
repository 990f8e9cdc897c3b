"""Whether two checkpoints hold the same weights (docs/roles.md): a digest of a checkpoint's weight files.

Hub revisions can serve the same files under different names (EleutherAI/pythia issues #195 and #205: 86 of
pythia-2.8b's 154 step branches, step0 among them, serve the final weights), and tables/role_agreement.csv must name
such a pair rather than count it as a role kept. The digest is the sha256 of the weight files' names and sha256s:

- a random-init or fine-tuned checkpoint: its record's file entries (written and checked with its weights);
- a pretrained checkpoint from the hub: the Hugging Face cache's blob of each weight file, whose name is the file's
  sha256 for a large-file-storage file (nothing read), else the file hashed;
- a pretrained checkpoint in a local folder or package: each weight file hashed.

Equal digests mean byte-equal weight files; equal weights saved differently (another layout, dtype or key names)
are not detected, and two such checkpoints are compared as any other pair.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ..core.file_records import file_sha256
from .checkpoints import OWN_KINDS, read_manifest

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def is_weight_file(name: str) -> bool:
    return name.endswith(WEIGHT_SUFFIXES) and not name.startswith("training_args")


def combine(entries: dict[str, str]) -> str | None:
    """One digest of (file name -> sha256), None without a weight file."""
    if not entries:
        return None
    lines = "\n".join(f"{name} {digest}" for name, digest in sorted(entries.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def folder_entries(folder: Path) -> dict[str, str]:
    """name -> sha256 of every weight file of a model folder: a cache blob's name where the file is a link to a blob
    named by its sha256 (the Hugging Face cache), else the file's content hashed."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if not path.is_file() or not is_weight_file(name):
            continue
        target = path.resolve()
        entries[name] = target.name if path.is_symlink() and SHA256.match(target.name) else file_sha256(target)
    return entries


def _pretrained_folder(manifest: dict[str, Any]) -> Path | None:
    location = Path(str(manifest["load_from"]))
    if location.is_dir():
        return location
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(manifest["load_from"]), revision=manifest.get("revision"),
                                      local_files_only=True))
    except Exception:  # noqa: BLE001 - not in the cache: no digest, the pair is compared as any other
        return None


def weights_digest(manifest_path: str | Path) -> str | None:
    """The digest of a checkpoint's weights (see the module's docstring), None where its files cannot be found."""
    manifest = read_manifest(manifest_path, verify=False)
    if manifest["kind"] in OWN_KINDS:
        files = manifest.get("files") or {}
        return combine({name: entry["sha256"] for name, entry in files.items()
                        if is_weight_file(name) and "sha256" in entry})
    folder = _pretrained_folder(manifest)
    return combine(folder_entries(folder)) if folder is not None else None
