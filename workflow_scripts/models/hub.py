"""Hub models fetched whole, before any job loads them: into the Hugging Face cache (the model card's job, which
runs where the internet is, so that jobs on compute nodes without it find the weights there) or into a folder of
its own (the prefetch, for an offline run).

Only what loading the model needs is fetched: its config, tokenizer files and one set of weights (safetensors
when the repository has them, else pytorch_model*.bin), never the TensorFlow, Flax, ONNX or other copies a
repository may also hold, which can be several times larger.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError, ChecksumMismatchError, SourceUnavailableError
from ..data.fetch import GIT_BLOB, file_digests

log = logging.getLogger(__name__)

# What the prefetch wrote into a models folder (MODELS/PREFETCH.json): model name -> its source and files' sha256.
PREFETCH_RECORD = "PREFETCH.json"
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
    cache when None; return the folder holding it. Files already there are not downloaded again, but every
    file is checked against the digest the hub lists for it (:func:`verify_model_files`)."""
    try:
        from huggingface_hub import HfApi, snapshot_download

        api = HfApi()
        # files_metadata: each file's size, git blob id and, for an LFS file (the weights), its sha256.
        listing = api.model_info(repo_id, revision=revision, files_metadata=True)
        files = model_files([sibling.rfilename for sibling in listing.siblings or []])
        if not any(name == "config.json" for name in files):
            raise AtlasError(f"hub model {repo_id!r}: the repository holds no config.json at its top level; "
                             "it is not a transformers model")
        log.info("hub model %s (%s, commit %s): fetching %s", repo_id, revision or "main", listing.sha,
                 ", ".join(files))
        # Into a folder of its own, the listed commit itself: the files are those the listing describes even if
        # the branch moves meanwhile. Into the cache, the revision as given, so that the cache records the
        # branch or tag (refs/NAME), which jobs that load the model by that name offline need.
        folder = Path(snapshot_download(repo_id, revision=listing.sha if local_dir else revision,
                                        allow_patterns=files, local_dir=str(local_dir) if local_dir else None))
        commit = listing.sha if local_dir else folder.name  # the cache keeps a snapshot per commit
        if commit != listing.sha:  # the branch moved between the listing and the download: check against its own
            listing = api.model_info(repo_id, revision=commit, files_metadata=True)
    except AtlasError:
        raise
    except Exception as exc:  # any network, HTTP or hub error: the hub could not provide it
        raise SourceUnavailableError(
            f"hub model {repo_id!r} (revision {revision or 'main'}) could not be downloaded: "
            f"{type(exc).__name__}: {exc}\n"
            "fix: run where the hub is reachable (on a cluster: the login node), or run the study offline: the "
            "prefetch (python -m workflow_scripts.entrypoints.prefetch), run where the hub is reachable, downloads "
            "every model and corpus of a study into a mirror, and snakemake --profile profiles/offline --config "
            "mirror=PATH runs the study from it; or give the model as a local 'path' holding the downloaded model"
        ) from exc
    verify_model_files(folder, repo_id, revision, listing.sha, listing.siblings or [], files)
    return folder


def verify_model_files(folder: Path, repo_id: str, revision: str | None, commit: str, siblings: list,
                       files: list[str]) -> None:
    """Check each of ``files`` in ``folder`` against the hub's listing (``siblings`` of ``model_info(...,
    files_metadata=True)``): an LFS file (the weights) by the sha256 listed for it, any other by its git blob id.

    huggingface_hub checks neither (only a download's size), so bytes that changed after the hub listed them (a
    proxy or mirror serving other bytes, a corrupted cache) would otherwise be loaded. A file that differs is
    deleted, so that a rerun downloads it again, and refused with both digests.
    """
    listed = {sibling.rfilename: sibling for sibling in siblings}
    for name in files:
        sibling, path = listed.get(name), folder / name
        if sibling is not None and sibling.lfs is not None:
            algorithm, expected, received = "sha256", sibling.lfs.sha256, file_digests(path)["sha256"]
        elif sibling is not None and sibling.blob_id:
            algorithm, expected = "git blob id (sha1)", sibling.blob_id
            received = file_digests(path, (GIT_BLOB,))[GIT_BLOB]
        else:  # the hub listed no digest for it: nothing to check against
            continue
        if received == expected:
            continue
        size = path.stat().st_size
        _delete_download(path, folder)
        raise ChecksumMismatchError(
            f"hub model {repo_id!r} (revision {revision or 'main'}, commit {commit}): the downloaded file {name} "
            f"is not the file the hub lists, and was deleted:\n"
            f"  expected {algorithm} {expected} (the hub's listing of commit {commit})\n"
            f"  received {algorithm} {received}, {size} bytes\n"
            "fix: run again to download it afresh; if it differs again, what serves the downloads (HF_ENDPOINT, a "
            "proxy) gives other bytes than the hub lists: download where the hub is reached directly (e.g. with the "
            "prefetch, python -m workflow_scripts.entrypoints.prefetch), or give the model as a local 'path'")
    log.info("hub model %s (commit %s): %d files match the hub's digests", repo_id, commit, len(files))


def _delete_download(path: Path, folder: Path) -> None:
    """Delete a downloaded file: in the cache, the blob its snapshot link points to too; in a folder of its own,
    the download record huggingface_hub keeps beside it (else it would take the file as present)."""
    if path.is_symlink():
        path.resolve().unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    record = folder / ".cache" / "huggingface" / "download" / f"{path.relative_to(folder)}.metadata"
    record.unlink(missing_ok=True)


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


def read_model_record(manifest: Path) -> dict[str, Any]:
    """What the prefetch recorded about the models it wrote (``MODELS/PREFETCH.json``): name -> source, files."""
    if not manifest.is_file():
        return {}
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or not all(isinstance(r, dict) and isinstance(r.get("source"), str)
                                                   and isinstance(r.get("files"), dict) for r in record.values()):
            raise ValueError("each model's record needs its source and files")
    except (OSError, ValueError) as exc:
        raise AtlasError(f"{manifest}: not a readable prefetch record of models ({type(exc).__name__}: {exc})\n"
                         "fix: restore it, or move it away: the models are then fetched again") from exc
    return record


def prefetched_hub_id(folder: str | Path) -> str | None:
    """The hub id a prefetched model folder (``MODELS/NAME``) was downloaded from, as ``MODELS/PREFETCH.json``
    records it ("hub ID" or "hub ID @ REVISION"); None for any other folder, or where the record is unreadable."""
    folder = Path(folder)
    try:
        entry = read_model_record(folder.parent / PREFETCH_RECORD).get(folder.name, {})
    except AtlasError as error:  # the card still describes the model; only the report's matching needs the id
        log.warning("model folder %s: no hub id recorded, the report will not compare it with a published number "
                    "of one model: %s", folder, error)
        return None
    source = entry.get("source", "")
    if not source.startswith("hub "):
        return None  # copied from a local or package folder
    return source.removeprefix("hub ").split(" @ ")[0].strip() or None
