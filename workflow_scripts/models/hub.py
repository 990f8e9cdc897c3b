"""Hub models fetched whole, before any job loads them: into the Hugging Face cache (the model card's job, which
runs where the internet is, so that jobs on compute nodes without it find the weights there) or into a folder of
its own (the prefetch, for an offline run).

Only what loading the model needs is fetched: its config, tokenizer files and one set of weights (safetensors
when the repository has them, else pytorch_model*.bin), never the TensorFlow, Flax, ONNX or other copies a
repository may also hold, which can be several times larger.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from ..core.errors import AtlasError, SourceUnavailableError

log = logging.getLogger(__name__)

# Config, tokenizer and vocabulary files (vocab.txt, merges.txt, spiece.model, tokenizer.json, *.index.json).
_SMALL_SUFFIXES = (".json", ".txt", ".model")


def model_files(repository_files: list[str]) -> list[str]:
    """The files of a hub repository that loading the model with transformers needs (top-level files only:
    sub-folders hold other frameworks' exports, e.g. onnx/, openvino/)."""
    top = [name for name in repository_files if "/" not in name]
    safetensors = [name for name in top if name.endswith(".safetensors")]
    weights = safetensors or [name for name in top if name.startswith("pytorch_model") and name.endswith(".bin")]
    return sorted({*weights, *(name for name in top if name.endswith(_SMALL_SUFFIXES))})


def fetch_hub_model(repo_id: str, revision: str | None, local_dir: str | Path | None = None) -> Path:
    """Download what model ``repo_id`` (at ``revision``) needs into ``local_dir``, or into the Hugging Face
    cache when None; return the folder holding it. Files already there are not downloaded again."""
    try:
        from huggingface_hub import HfApi, snapshot_download

        listing = HfApi().model_info(repo_id, revision=revision)
        files = model_files([sibling.rfilename for sibling in listing.siblings or []])
        if not any(name == "config.json" for name in files):
            raise AtlasError(f"hub model {repo_id!r}: the repository holds no config.json at its top level; "
                             "it is not a transformers model")
        log.info("hub model %s (%s): fetching %s", repo_id, revision or "main", ", ".join(files))
        folder = snapshot_download(repo_id, revision=revision, allow_patterns=files,
                                   local_dir=str(local_dir) if local_dir else None)
    except AtlasError:
        raise
    except Exception as exc:  # any network, HTTP or hub error: the hub could not provide it
        raise SourceUnavailableError(
            f"hub model {repo_id!r} (revision {revision or 'main'}) could not be downloaded: "
            f"{type(exc).__name__}: {exc}\n"
            "fix: run where the hub is reachable (on a cluster: the login node; the prefetch, "
            "python -m workflow_scripts.entrypoints.prefetch, downloads every model of a study there), or give "
            "the model as a local 'path' holding the downloaded model") from exc
    return Path(folder)


def copy_model_folder(source: Path, destination: Path) -> Path:
    """Copy a local model folder (a 'path' or a package's) to ``destination``, replacing what was there."""
    if destination.exists():
        shutil.rmtree(destination)
    partial = destination.with_name(f".{destination.name}.partial")
    if partial.exists():
        shutil.rmtree(partial)
    shutil.copytree(source, partial)
    partial.rename(destination)  # whole or not at all: an interrupted copy leaves only the .partial folder
    return destination
