"""Atomic output writing and job logging shared by every stage.

Every output is written to a temporary file in the destination directory and
renamed into place only once it is complete, so an interrupted job never leaves
a file that a rerun would trust. Outputs get the permissions a plain ``open()``
would give them (0o666 less the umask), so that a group sharing a results folder
on a cluster can read them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import AtlasError, InputFormatError

PARQUET_COMPRESSION = "zstd"


def _read_umask() -> int:
    """The process's umask, read without changing it where the system allows.

    os.umask() can only read the mask by setting it, and the mask is process-wide: a thread
    creating a file between the set and the restore would get the wrong mode. Linux shows it in
    /proc/self/status; elsewhere the set-and-restore runs once, here at import.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


# Read once: a job does not change its umask while it runs.
UMASK = _read_umask()
# The mode open() gives a new file (where the folder has no default ACL, which open() follows too).
FILE_MODE = 0o666 & ~UMASK


def _create_partial(destination: Path) -> tuple[Path, int]:
    """Create an empty, uniquely named temporary file beside ``destination``; return it and its inode.

    Not tempfile.mkstemp: that creates files with mode 0600, which a rename would then carry to the
    output, unreadable to the group. os.open with 0o666 lets the kernel apply the umask (or the
    folder's default ACL) exactly as for a plain open().
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = destination.parent / f".{destination.name}.{secrets.token_hex(4)}.partial"
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        try:
            return tmp, os.fstat(fd).st_ino
        finally:
            os.close(fd)
    raise FileExistsError(f"{destination.parent}: no free temporary name for {destination.name}")


@contextlib.contextmanager
def atomic_path(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``destination``; rename it into place on success.

    The file at the temporary path already exists, with the mode a plain ``open()`` would give
    it; writers that open it for writing keep that mode.
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp, inode = _create_partial(destination)
    try:
        yield tmp
        # A writer that replaced the file (its own write-and-rename) may have left another mode.
        if os.stat(tmp).st_ino != inode:
            os.chmod(tmp, FILE_MODE)
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


def read_rows(path: str | os.PathLike[str], columns: Sequence[str], example_ids: Iterable[int] | None = None
              ) -> pa.Table:
    """``columns`` of a Parquet table, in file order; with ``example_ids``, only the rows of those examples
    (``columns`` must then include ``example_id``).

    Read through ``ParquetFile``, not ``pq.read_table``: the latter imports pyarrow's dataset layer, about 0.2 s
    of a short analysis job's time.
    """
    parquet = pq.ParquetFile(path)
    missing = [c for c in columns if c not in parquet.schema_arrow.names]
    if missing:  # ParquetFile.read would leave them out without a word
        raise ValueError(f"{path}: no column {', '.join(missing)} (it has {', '.join(parquet.schema_arrow.names)})")
    if example_ids is None:
        return parquet.read(columns=list(columns))
    wanted = pa.array(list(example_ids), type=parquet.schema_arrow.field("example_id").type)
    # Only the row groups whose example_id range holds a wanted id (a shard's job reads a small part).
    ordered = np.sort(np.asarray(wanted.to_numpy(zero_copy_only=False), dtype=np.int64))
    schema = parquet.metadata.schema  # Parquet's leaf columns: a list column before example_id counts as one
    id_column = next(i for i in range(len(schema)) if schema.column(i).path == "example_id")
    groups = []
    for group in range(parquet.num_row_groups):
        statistics = parquet.metadata.row_group(group).column(id_column).statistics
        if statistics is not None and statistics.has_min_max:
            first = np.searchsorted(ordered, statistics.min)
            if first == len(ordered) or ordered[first] > statistics.max:
                continue
        groups.append(group)
    table = parquet.read_row_groups(groups, columns=list(columns)) if groups else \
        parquet.schema_arrow.empty_table().select(list(columns))
    return table.filter(pc.is_in(table["example_id"], value_set=wanted))


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


def stack_csv_parts(parts: Iterable[str | os.PathLike[str]], output: str | os.PathLike[str], *,
                    sort_by: Sequence[str], columns: Sequence[str] | None = None,
                    empty_columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The CSV parts of one study table (one per job), one under the other, sorted (stable) by the ``sort_by``
    columns they have. Nothing is written: the caller adds what its table needs and writes it to ``output``.

    ``columns``: keep these, in this order; a part without one of them is refused by name. With no parts: an
    empty table with ``empty_columns`` (or ``columns``) when given, else an error naming ``output``.
    """
    frames = []
    for path in parts:
        frame = read_csv(path)
        if columns is not None:
            missing = [c for c in columns if c not in frame.columns]
            if missing:
                raise InputFormatError(path, None, f"columns {missing} are missing (a part of {Path(output).name} "
                                       f"has {list(columns)})", "delete the part and rerun snakemake to rebuild it")
            frame = frame[list(columns)]
        frames.append(frame)
    empty = empty_columns if empty_columns is not None else columns
    if not frames:
        if empty is None:
            raise AtlasError(f"{output}: no part tables to combine (the study analysed nothing for this table)")
        return pd.DataFrame(columns=list(empty))
    table = pd.concat(frames, ignore_index=True)
    return table.sort_values([c for c in sort_by if c in table.columns], kind="stable").reset_index(drop=True)


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


def listed(value: Any) -> list[str]:
    """Paths given as one path, a list of them or nothing (a rule's named input, ``smk.input.get``), as a list."""
    if value is None:
        return []
    return [str(value)] if isinstance(value, (str, os.PathLike)) else [str(path) for path in value]
