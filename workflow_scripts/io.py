"""Atomic output writing and job logging shared by every stage.

Every output is written to a temporary file in the destination directory and
renamed into place only once it is complete, so an interrupted job never leaves
a file that a rerun would trust.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import AtlasError

PARQUET_COMPRESSION = "zstd"


@contextlib.contextmanager
def atomic_path(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``destination``; rename it into place on success."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent
    )
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, destination)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_table(table: pa.Table | pd.DataFrame, destination: str | os.PathLike[str],
                metadata: dict[str, Any] | None = None) -> None:
    """Write a Parquet table atomically, zstd-compressed, with JSON-encoded metadata."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if metadata:
        existing = dict(table.schema.metadata or {})
        existing.update({f"atlas.{k}".encode(): json.dumps(v).encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(existing)
    with atomic_path(destination) as tmp:
        pq.write_table(table, tmp, compression=PARQUET_COMPRESSION)


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the ``atlas.*`` metadata written by :func:`write_table`."""
    raw = pq.read_schema(path).metadata or {}
    return {
        k.decode()[len("atlas."):]: json.loads(v)
        for k, v in raw.items()
        if k.decode().startswith("atlas.")
    }


def read_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A table this workflow wrote ("" is missing, nothing else is); an unreadable one names its file."""
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise AtlasError(f"{path}: unreadable table ({exc}); delete it and rerun snakemake to rebuild it") from exc


def write_csv(frame: pd.DataFrame, destination: str | os.PathLike[str]) -> None:
    with atomic_path(destination) as tmp:
        frame.to_csv(tmp, index=False)


def write_json(obj: Any, destination: str | os.PathLike[str]) -> None:
    with atomic_path(destination) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def setup_logging(log_path: str | os.PathLike[str] | None = None,
                  level: int = logging.INFO) -> logging.Logger:
    """Send this package's log records to ``log_path`` (a rule's ``log:``) and stderr."""
    logger = logging.getLogger("workflow_scripts")
    logger.setLevel(level)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    return logger
