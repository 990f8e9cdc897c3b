"""Bytes that are not UTF-8, in every text input of the data layer, give one clear error.

Each test writes a file with a Latin-1 byte (0xe9, "é" in Latin-1) at a line and
byte offset known by construction, and checks that the error names the file, the
1-based line, the 0-based byte offset in the file and the fix, whichever reader
(CoNLL-U, GLUE TSV, WiC, WikiText, GloVe; plain files and zip members) hit it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from support.entries import GLOVE_RELEASE, UD, UD_SOURCE, WIC_RELEASE
from workflow_scripts.core.errors import InputEncodingError, InputFormatError
from workflow_scripts.data.build import build_glove, build_glue, build_treebank, build_wic, build_wiki
from workflow_scripts.data.fetch import unavailable
from workflow_scripts.data.glove import parse_glove_file, parse_glove_zip
from workflow_scripts.data.glue import parse_glue_tsv
from workflow_scripts.data.text_files import decode_text, first_bad_byte, open_text, read_text
from workflow_scripts.data.ud import parse_conllu
from workflow_scripts.data.wic import parse_wic_files, parse_wic_release_zip

LATIN1_E = b"\xe9"
FIX = "re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8"


def with_bad_byte(path: Path, before: str, after: str, *, bom: bool = False) -> tuple[Path, int, int]:
    """Write ``before`` + 0xe9 + ``after`` (UTF-8 otherwise); return the path, line and offset of 0xe9."""
    head = (b"\xef\xbb\xbf" if bom else b"") + before.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + LATIN1_E + after.encode("utf-8"))
    return path, before.count("\n") + 1, len(head)


def check(error: BaseException, name: object, line: int, offset: int) -> None:
    assert isinstance(error, InputEncodingError) and isinstance(error, InputFormatError)
    assert str(error.path) == str(name)
    assert (error.line, error.offset, error.byte) == (line, offset, 0xE9)
    message = str(error)
    assert message.startswith(f"{name}, line {line}: byte 0xe9 at byte offset {offset} ")
    assert "is not valid UTF-8" in message
    assert FIX in message
    assert "shared/" not in message


# --- the shared helper ------------------------------------------------------------------------


def test_first_bad_byte_counts_lines_and_file_offsets():
    # "é" in UTF-8 is two bytes, so the bad byte on line 3 is at 4 + 1 + 3 + 2 = offset 10.
    lines = [b"abc\n", b"\xc3\xa9\n", b"xy\r\n", b"ok\xe9\n"]
    assert first_bad_byte(lines) == (4, 4 + 3 + 4 + 2, 0xE9)
    assert first_bad_byte([b"fine\n", b"caf\xc3\xa9\n"]) is None


def test_truncated_multibyte_sequence_at_end_of_file(tmp_path):
    path = tmp_path / "cut.txt"
    path.write_bytes(b"one\ntwo caf\xc3")  # the last character lost its second byte
    with pytest.raises(InputEncodingError) as info:
        read_text(path)
    assert (info.value.line, info.value.offset, info.value.byte) == (2, 11, 0xC3)


def test_decode_text_counts_only_newlines_as_line_breaks():
    data = b"a\rb\nc\r\nd" + LATIN1_E
    with pytest.raises(InputEncodingError) as info:
        decode_text(data, "member.txt")
    check(info.value, "member.txt", 3, 8)


def test_offset_is_from_the_start_of_the_file_not_of_a_read_chunk(tmp_path):
    # Far beyond the text stream's first read chunk (8 KiB), where a UnicodeDecodeError's
    # own position is relative to the chunk.
    before = "".join(f"line {i}\n" for i in range(5000))
    path, line, offset = with_bad_byte(tmp_path / "long.txt", before, "\nend\n")
    assert (line, offset) == (5001, len(before))
    with pytest.raises(InputEncodingError) as info, open_text(path) as handle:
        for _ in handle:
            pass
    check(info.value, path, line, offset)


def test_readline_readlines_and_read_are_checked(tmp_path):
    path, line, offset = with_bad_byte(tmp_path / "t.txt", "fine\nalso fine\n", "\n")
    for method in ("readline", "readlines", "read"):
        with pytest.raises(InputEncodingError) as info, open_text(path) as handle:
            while getattr(handle, method)():
                pass
        check(info.value, path, line, offset)


# --- every reader of the data layer -------------------------------------------------------------


def test_conllu(tmp_path):
    before = ("# sent_id = s1\n# text = Fine.\n1\tFine\t_\t_\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
              "2\t.\t_\t_\t_\t_\t1\tpunct\t_\t_\n\n# sent_id = s2\n# text = caf")
    path, line, offset = with_bad_byte(tmp_path / "en_ewt-ud-dev.conllu", before,
                                       "\n1\tcafe\t_\t_\t_\t_\t0\troot\t_\t_\n")
    assert line == 7
    with pytest.raises(InputEncodingError) as info:
        parse_conllu(path)
    check(info.value, path, line, offset)


def test_glue_headerless_cola(tmp_path):
    path, line, offset = with_bad_byte(tmp_path / "CoLA" / "dev.tsv", "gj04\t1\t\tGood one.\ngj04\t0\t*\tCaf",
                                       " bad.\n")
    assert (line, offset) == (2, 18 + 12)  # "gj04\t1\t\tGood one.\n" + "gj04\t0\t*\tCaf"
    with pytest.raises(InputEncodingError) as info:
        parse_glue_tsv("cola", path)
    check(info.value, path, line, offset)


def test_glue_with_byte_order_mark_counts_it_in_the_offset(tmp_path):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    path, line, offset = with_bad_byte(tmp_path / "MRPC" / "dev.tsv", header + "1\t1\t2\tA caf",
                                       "\tB.\n", bom=True)
    assert (line, offset) == (2, 3 + len(header) + 11)
    with pytest.raises(InputEncodingError) as info:
        parse_glue_tsv("mrpc", path)
    check(info.value, path, line, offset)


def test_glue_bad_byte_in_header(tmp_path):
    path, line, offset = with_bad_byte(tmp_path / "RTE" / "dev.tsv", "index\tsentence1\tsentence", "2\tlabel\n")
    with pytest.raises(InputEncodingError) as info:
        parse_glue_tsv("rte", path)
    check(info.value, path, 1, 24)  # "index\tsentence1\tsentence" is 5 + 1 + 9 + 1 + 8 bytes
    assert (line, offset) == (1, 24)


@pytest.mark.parametrize("bad", ["data", "gold"])
def test_wic_files(tmp_path, bad):
    first = "bank\tN\t0-1\tbank of it\tthe bank\n"  # 31 bytes
    data = first + "play\tV\t0-0\tplay on\tplay it\n"
    gold = "T\nF\n"
    if bad == "data":
        # The bad byte follows "play\tV\t0-0\tplay on\tplay" (23 bytes) on line 2.
        data_path, line, offset = with_bad_byte(tmp_path / "dev.data.txt",
                                                first + "play\tV\t0-0\tplay on\tplay", " it\n")
        gold_path = tmp_path / "dev.gold.txt"
        gold_path.write_text(gold, encoding="utf-8")
        name = data_path
        assert (line, offset) == (2, 31 + 23)
    else:
        data_path = tmp_path / "dev.data.txt"
        data_path.write_text(data, encoding="utf-8")
        gold_path, line, offset = with_bad_byte(tmp_path / "dev.gold.txt", "T\n", "\n")
        name = gold_path
        assert (line, offset) == (2, 2)
    with pytest.raises(InputEncodingError) as info:
        parse_wic_files(data_path, gold_path)
    check(info.value, name, line, offset)


@pytest.mark.parametrize("member", ["data", "gold"])
def test_wic_release_zip_names_the_member(tmp_path, member):
    archive = tmp_path / "WiC_dataset.zip"
    data = b"bank\tN\t0-1\tbank of it\tthe bank\n"
    gold = b"T\n"
    if member == "data":
        data = b"bank\tN\t0-1\tbank of it\tthe b" + LATIN1_E + b"nk\n"
    else:
        gold = b"T\n" + LATIN1_E + b"\n"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("dev/dev.data.txt", data)
        zf.writestr("dev/dev.gold.txt", gold)
    with pytest.raises(InputEncodingError) as info:
        parse_wic_release_zip(archive, "dev")
    if member == "data":
        check(info.value, f"{archive}:dev/dev.data.txt", 1, 27)
    else:
        check(info.value, f"{archive}:dev/dev.gold.txt", 2, 2)


def test_glove_file(tmp_path):
    path, line, offset = with_bad_byte(tmp_path / "glove.txt", "the 0.1 0.2\ncaf", " 0.3 0.4\n")
    with pytest.raises(InputEncodingError) as info:
        parse_glove_file(path, None)
    check(info.value, path, 2, 15)
    assert (line, offset) == (2, 15)


def test_glove_zip_member(tmp_path):
    archive = tmp_path / "glove.6B.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("glove.6B.50d.txt", b"the 0.1 0.2\nof 0.3 0.4\ncaf" + LATIN1_E + b" 0.5 0.6\n")
    with pytest.raises(InputEncodingError) as info:
        parse_glove_zip(archive, "glove.6B.50d.txt", None)
    check(info.value, f"{archive}:glove.6B.50d.txt", 3, 26)


# --- the builders (mirror files), which must also leave no output behind -------------------------


def no_outputs(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()] if directory.exists() else []


def test_build_wiki_from_mirror_file(tmp_path):
    path, line, offset = with_bad_byte(tmp_path / "mirror" / "wiki.train.raw",
                                       " = T = \n \n A first paragraph . \n A caf", " second . \n")
    out = tmp_path / "out"
    with pytest.raises(InputEncodingError) as info:
        build_wiki([path], out / "wiki.parquet", n_segments=1, seed=1, max_words=128,
                   hub={"dataset": "d", "config": "c", "split": "train"}, mirror=None, offline=True)
    check(info.value, path, 4, 38)  # 8 + 2 + 22 bytes of lines 1-3, then " A caf"
    assert (line, offset) == (4, 38)
    assert no_outputs(out) == []


def test_build_glue_glove_wic_treebank_from_mirror_files(tmp_path):
    out = tmp_path / "out"
    glue, line, offset = with_bad_byte(tmp_path / "m" / "CoLA" / "dev.tsv", "gj04\t1\t\t", "t\n")
    with pytest.raises(InputEncodingError) as info:
        build_glue("cola", "dev", [glue], out / "cola.parquet", mirror=None, offline=True)
    check(info.value, glue, 1, 8)

    glove, _, _ = with_bad_byte(tmp_path / "m" / "glove.txt", "a 1\n", " 2\n")
    with pytest.raises(InputEncodingError) as info:
        build_glove([glove], out / "glove.parquet", max_words=None, mirror=None, offline=True,
                    download_dir=tmp_path / "dl", **GLOVE_RELEASE)
    check(info.value, glove, 2, 4)

    data = tmp_path / "m" / "dev.data.txt"
    data.write_text("bank\tN\t0-1\tbank of it\tthe bank\n", encoding="utf-8")
    gold, _, _ = with_bad_byte(tmp_path / "m" / "dev.gold.txt", "", "\n")
    with pytest.raises(InputEncodingError) as info:
        build_wic("dev", [data, gold], out / "wic.parquet", mirror=None, offline=True,
                  download_dir=tmp_path / "dl", **WIC_RELEASE)
    check(info.value, gold, 1, 0)

    conllu, _, _ = with_bad_byte(tmp_path / "m" / "t.conllu", "# text = ", "\n1\te\t_\t_\t_\t_\t0\troot\t_\t_\n")
    with pytest.raises(InputEncodingError) as info:
        build_treebank(UD["ewt"], "dev", [conllu], out / "ewt.parquet", mirror=None, offline=True,
                       download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    check(info.value, conllu, 1, 9)
    assert no_outputs(out) == []
    assert not (tmp_path / "dl").exists()


# --- error messages name no folder outside the repository -------------------------------------


def test_unavailable_source_names_mirror_layout_not_a_folder_outside_the_repository():
    message = str(unavailable("cola", "dev", ["hub dataset nyu-mll/glue (cola, validation)"], None, None))
    assert "shared/" not in message
    assert "\nfix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all\n" \
        "  (PATH holds glue/CoLA/dev.tsv, paths relative to it;" in message
    assert message.endswith("python -m workflow_scripts.entrypoints.prefetch (README, 'Cluster without internet "
                            "on compute nodes').")
    wic = str(unavailable("wic", "train", [], None, "/m"))
    assert "PATH holds wic/train/train.data.txt and wic/train/train.gold.txt, paths relative to it" in wic
    wiki = str(unavailable("wiki", "segments", [], None, None))
    assert "wikitext-103-raw/wiki.train.raw or wikitext-2-raw/wiki.train.raw" in wiki
    assert "shared/" not in wic + wiki
