"""Reading attention dumps in bounded memory: one row group (a batch of examples) at a time, the next one
read ahead on a thread.

    dump = AttentionDump("results/attention/all-MiniLM-L6-v2/pretrained/ewt/dev")
    for example in dump.iter_examples():        # token level, shard by shard
        example.attention                       # float16 (layers, heads, T, T)
    words = token_words("results/tokens/all-MiniLM-L6-v2/ewt/dev.parquet")
    for example in dump.iter_word_maps(words, n_words):  # word level (METHODS 5)
        ...
    dump.get(17)                                # one example, reading only its row group

Every shard is checked against the dump's manifest on read: its size, the
extraction run and place it was written for (footer metadata), its row count, its
pages' checksums, and (when read whole) its example ids in order. A corrupt, truncated,
missing or foreign shard (one copied in from another dump or another run of this one,
or swapped with a sibling) raises CorruptShardError naming it; it is removed together with the
dump's manifest, so that the next plain ``snakemake`` run replans the extraction
(analyses depend on the manifest) instead of trusting the dump.

Signals (docs/signals.md): a dump holds one attention signal, ``dump.signal`` (the manifest's ``signal``;
dumps written before signals hold ``attention``). The rows of ``attention`` and ``rollout`` maps sum to 1;
those of ``norm`` (each weight times its value vector's norm) do not, so every analysis reads norm dumps
row-normalised: by default (``normalise_rows=None``) a norm dump's rows come back divided by their sum
(float32 sums, float16 maps; a zero row stays zero). Argmax-based analyses (a token's most attended
token) are unaffected by it; distribution-based ones (entropy, attention mass on a token class, the
word-level maps, which average token rows) need distributions. ``normalise_rows=False`` reads the stored
norms themselves.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.file_records import mark_damaged, seal_problem
from ..core.float16 import float16_to_float32
from .align import tokens_to_words, word_units
from .layout import FULL, LAYOUTS, stored_values, unpack

log = logging.getLogger(__name__)


class CorruptShardError(AtlasError):
    """A shard that cannot be read back as written."""


@dataclass
class ExampleMaps:
    example_id: int
    attention: np.ndarray  # (layers, heads, T, T) float16 at token level; float32 at word level
    unit_word: np.ndarray | None = None  # word level: the word of each unit (-1: special/loose token)
    token_unit: np.ndarray | None = None  # word level: the unit of each token

    @property
    def n_tokens(self) -> int:
        return self.attention.shape[-1]


class AttentionDump:
    def __init__(self, directory: str | Path, *, remove_corrupt: bool = True,
                 normalise_rows: bool | None = None) -> None:
        self.directory = Path(directory)
        manifest_path = self.directory / "manifest.json"
        try:
            self.manifest = json.loads(manifest_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CorruptShardError(f"{manifest_path}: missing or unreadable dump manifest ({exc}); rerun "
                                    "snakemake to rebuild this dump") from exc
        if (problem := seal_problem(self.manifest)) and remove_corrupt:
            mark_damaged(manifest_path, problem)
            raise CorruptShardError(f"attention dump manifest {manifest_path}: {problem}. It was removed: run "
                                    "snakemake again (no options needed) to gather it from the shards' records")
        if problem:
            raise CorruptShardError(f"attention dump manifest {manifest_path}: {problem}. Delete it and run "
                                    "snakemake again to gather it from the shards' records")
        self.num_layers = int(self.manifest["num_layers"])
        self.num_heads = int(self.manifest["num_heads"])
        self.remove_corrupt = remove_corrupt
        self.signal = str(self.manifest.get("signal", "attention"))
        self.layout = str(self.manifest.get("layout", FULL))  # dumps written before causal layouts: whole maps
        if self.layout not in LAYOUTS:
            raise CorruptShardError(f"attention dump manifest {manifest_path}: layout {self.layout!r} is none of "
                                    f"{', '.join(LAYOUTS)}; rerun snakemake to rebuild this dump")
        # None: the rows of norm maps, which are no distributions, are divided by their sums (module docstring).
        self.normalise_rows = self.signal == "norm" if normalise_rows is None else bool(normalise_rows)

    def __len__(self) -> int:
        return int(self.manifest["examples"])

    def _corrupt(self, path: Path, problem: str) -> CorruptShardError:
        manifest = self.directory / "manifest.json"
        if self.remove_corrupt:
            # The manifest is what marks a dump complete: without it, the next plain run rebuilds the dump.
            mark_damaged(path, problem, remove=(manifest,), target=manifest)
            action = ("the shard and the dump's manifest were removed; run snakemake again (no options "
                      "needed) to rebuild the dump")
        else:
            action = f"delete it and {manifest}, then run snakemake again to rebuild the dump"
        return CorruptShardError(f"attention shard {path} is corrupt ({problem}); {action}")

    def _open(self, shard: Mapping) -> pq.ParquetFile:
        path = self.directory / shard["file"]
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise self._corrupt(path, "the file is missing") from None
        if "bytes" in shard and size != shard["bytes"]:
            raise self._corrupt(path, f"{size} bytes, the manifest says {shard['bytes']}")
        try:
            # Memory-mapped: pages are decompressed (and checked) straight from the page cache, without first
            # copying the file into Arrow's buffers: the read path runs at about twice the speed. Shards are
            # renamed into place whole and never written again, and their size was checked just above.
            parquet = pq.ParquetFile(path, page_checksum_verification=True, memory_map=True)
        except Exception as exc:  # truncated footer, wrong magic bytes, ...
            raise self._corrupt(path, f"{type(exc).__name__}: {exc}") from exc
        self._check_identity(path, shard, parquet)
        if parquet.metadata.num_rows != shard["rows"]:
            raise self._corrupt(path, f"{parquet.metadata.num_rows} rows, the manifest says {shard['rows']}")
        return parquet

    def _check_identity(self, path: Path, shard: Mapping, parquet: pq.ParquetFile) -> None:
        """Refuse a shard written for another dump or another place in this one (a copied or swapped file).

        Each shard's job gives its shard a random run id (footer ``atlas.run_id``), which the manifest
        lists in the shard's entry. Dumps written before shard jobs carry one ``atlas.dump_id`` in every
        shard and at the top of the manifest; those are checked against it.
        """
        metadata = parquet.schema_arrow.metadata or {}
        footer = {k.decode(): v.decode() for k, v in metadata.items()}
        if "run_id" in shard:  # its own run id, or (a dump adopted from before shard jobs) its dump's id
            footer["atlas.run_id"] = footer_run_id(metadata)
            identity = {"atlas.run_id": shard["run_id"]}
        elif "dump_id" in self.manifest:
            identity = {"atlas.dump_id": self.manifest["dump_id"]}
        else:  # a dump written by hand (tests, tools) carries no identity
            return
        footer.setdefault("atlas.signal", "attention")  # shards written before signals hold attention maps
        footer.setdefault("atlas.layout", FULL)  # and before causal layouts, whole maps
        expected = {**identity, "atlas.shard": shard["file"], "atlas.model": self.manifest.get("model"),
                    "atlas.checkpoint": self.manifest.get("checkpoint"), "atlas.signal": self.signal,
                    "atlas.layout": self.layout}
        for key, value in expected.items():
            if value is not None and footer.get(key) != value:
                raise self._corrupt(path, f"it belongs to another dump or extraction run: its {key} is "
                                          f"{footer.get(key)!r}, the manifest expects {value!r}")

    def _decode(self, example_id: int, n_tokens: int, blob: np.ndarray, path: Path) -> ExampleMaps:
        expected = self.num_layers * self.num_heads * stored_values(n_tokens, self.layout) * 2
        if len(blob) != expected:
            raise self._corrupt(path, f"example {example_id} has {len(blob)} bytes, expected {expected}")
        maps = unpack(blob.view("<f2").reshape(self.num_layers, self.num_heads, -1), n_tokens, self.layout)
        if self.normalise_rows:
            maps = normalised_rows(maps)
        return ExampleMaps(int(example_id), maps)

    def _row_groups(self, shard: Mapping, parquet: pq.ParquetFile, groups: list[int],
                    ids_digest: Any = None) -> Iterator[ExampleMaps]:
        path = self.directory / shard["file"]

        def read(group: int) -> pa.Table:
            try:
                return parquet.read_row_group(group)
            except Exception as exc:  # checksum mismatch, truncated page
                raise self._corrupt(path, f"row group {group}: {type(exc).__name__}: {exc}") from exc

        if len(groups) == 1:  # one row group (get()): nothing to read ahead
            yield from self._examples(read(groups[0]), path, ids_digest)
            return
        # The next row group is read (decompressed, its checksums checked: pyarrow leaves the GIL meanwhile) on
        # a thread while the caller works on this one's examples: one row group ahead, so memory stays bounded.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dump-reader") as reader:
            ahead = reader.submit(read, groups[0]) if groups else None
            for index in range(len(groups)):
                table = ahead.result()
                ahead = reader.submit(read, groups[index + 1]) if index + 1 < len(groups) else None
                yield from self._examples(table, path, ids_digest)

    def _examples(self, table: pa.Table, path: Path, ids_digest: Any) -> Iterator[ExampleMaps]:
        """The examples of one row group (maps as views into its buffer); its ids go into ``ids_digest``."""
        example_ids = table["example_id"].to_numpy()
        if ids_digest is not None:
            ids_digest.update(np.ascontiguousarray(example_ids, dtype="<i8").tobytes())
        lengths = table["n_tokens"].to_numpy()
        start = 0
        for chunk in table["attention"].chunks:
            # Zero copy: each example's maps are a view into the row group's Arrow buffer,
            # not a Python bytes object (a copy) decoded afterwards.
            offsets, values = _binary_buffers(chunk)
            for row in range(len(chunk)):
                blob = values[offsets[row]:offsets[row + 1]]
                yield self._decode(int(example_ids[start + row]), int(lengths[start + row]), blob, path)
            start += len(chunk)

    @property
    def shard_files(self) -> list[str]:
        """The dump's shard file names, in storage order."""
        return [shard["file"] for shard in self.manifest["shards"]]

    def shard_entry(self, file: str) -> Mapping[str, Any]:
        """The manifest's entry of one shard (``shard-IIII-of-NNNN.parquet``)."""
        for shard in self.manifest["shards"]:
            if shard["file"] == file:
                return shard
        raise AtlasError(f"{self.directory / 'manifest.json'}: the dump has no shard {file} (its shards: "
                         f"{', '.join(self.shard_files)}); attention.num_shards changed since the dump was "
                         "written, so rerun snakemake to rebuild it")

    def shard_example_ids(self, files: Collection[str]) -> list[int]:
        """The example ids some shards hold, in storage order (their id columns alone, checked like every read):
        what a per-shard job needs of the token table and annotation, instead of all of them."""
        ids: list[int] = []
        for file in files:
            parquet = self._open(self.shard_entry(file))
            try:
                ids.extend(parquet.read(columns=["example_id"])["example_id"].to_pylist())
            except Exception as exc:  # checksum mismatch, truncated page
                raise self._corrupt(self.directory / file, f"{type(exc).__name__}: {exc}") from exc
        return ids

    def iter_examples(self, shards: Collection[str] | None = None) -> Iterator[ExampleMaps]:
        """Every example's token-level maps, one row group in memory at a time (storage order).

        ``shards``: read only these shard files (a per-shard analysis job); by default every shard.
        Reading a shard whole also checks its example ids, in order, against the manifest.
        """
        selected = self.manifest["shards"] if shards is None else [self.shard_entry(f) for f in shards]
        for shard in selected:
            parquet = self._open(shard)
            digest = hashlib.sha256()
            yield from self._row_groups(shard, parquet, list(range(parquet.num_row_groups)), digest)
            expected = shard.get("example_ids_sha256")
            if expected is not None and digest.hexdigest() != expected:
                raise self._corrupt(self.directory / shard["file"],
                                    "its example ids differ from those the manifest lists for it")

    def get(self, example_id: int) -> ExampleMaps:
        """One example's token-level maps, reading only the row group that holds it."""
        for shard in self.manifest["shards"]:
            if not shard["rows"]:
                continue
            parquet = self._open(shard)
            for group in range(parquet.num_row_groups):
                stats = parquet.metadata.row_group(group).column(0).statistics
                if stats is not None and stats.has_min_max and not stats.min <= example_id <= stats.max:
                    continue
                for example in self._row_groups(shard, parquet, [group]):
                    if example.example_id == example_id:
                        return example
        raise KeyError(f"example {example_id} is not in the dump {self.directory}")

    def iter_word_maps(self, token_words: Mapping[int, np.ndarray], n_words: Mapping[int, int],
                       layers: list[int] | None = None, shards: Collection[str] | None = None
                       ) -> Iterator[ExampleMaps]:
        """Every example's word-level maps (METHODS 5), optionally for some layers or shards only."""
        for example in self.iter_examples(shards):
            yield to_word_level(example, token_words[example.example_id], n_words[example.example_id], layers)


def normalised_rows(maps: np.ndarray) -> np.ndarray:
    """float16 maps whose rows are divided by their sums, computed in float32; a row summing to zero stays zero."""
    values = float16_to_float32(maps)
    sums = values.sum(axis=-1, keepdims=True)
    np.divide(values, sums, out=values, where=sums > 0)
    return values.astype(np.float16)


def footer_run_id(footer: Mapping[bytes, bytes]) -> str:
    """A shard's run id: its footer's ``atlas.run_id``; a shard written before shard jobs carries its dump's
    one ``atlas.dump_id`` instead, which then serves as the run id of each of its shards."""
    return (footer.get(b"atlas.run_id") or footer.get(b"atlas.dump_id") or b"").decode()


def _binary_buffers(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets and bytes of a (large_)binary Arrow array as numpy views, without copying."""
    _, offsets_buffer, values_buffer = chunk.buffers()
    offset_type = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type)[chunk.offset:chunk.offset + len(chunk) + 1]
    values = np.frombuffer(values_buffer, dtype=np.uint8) if values_buffer is not None else np.zeros(0, np.uint8)
    return offsets, values


def to_word_level(example: ExampleMaps, token_word: np.ndarray, n_words: int,
                  layers: list[int] | None = None) -> ExampleMaps:
    """Convert one example's maps to word units (sum over attended tokens, mean over attending)."""
    if len(token_word) != example.n_tokens:
        raise AtlasError(f"example {example.example_id}: the token table has {len(token_word)} tokens, the dump "
                         f"{example.n_tokens}; the token table and dump are out of step, rerun snakemake")
    try:
        token_unit, unit_word = word_units(token_word, n_words)
    except AtlasError as error:
        raise AtlasError(f"example {example.example_id}: {error}") from None
    maps = example.attention if layers is None else example.attention[layers]
    return ExampleMaps(example.example_id, tokens_to_words(maps, token_unit, len(unit_word)),
                       unit_word=unit_word, token_unit=token_unit)
