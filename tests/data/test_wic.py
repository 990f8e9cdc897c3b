"""WiC parsing (the data/gold text files and the release zip) and the WiC builder."""

from __future__ import annotations

import zipfile

import pyarrow.parquet as pq
import pytest

from support.entries import WIC_RELEASE
from support.source_files import input_error, no_partials, write
from workflow_scripts.core.errors import InputFormatError, SourceUnavailableError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_wic
from workflow_scripts.data.registry import find_in_mirror
from workflow_scripts.data.wic import parse_wic_files, parse_wic_release_zip

# --- WiC -------------------------------------------------------------------------------

WIC_DATA = ("board\tN\t2-2\tRoom and board .\tHe nailed boards across the windows .\n"
            "circulate\tV\t0-4\tCirculate a rumor .\tThis letter is being circulated among the faculty .\n"
            "hook\tN\t5-1\tHe hung it on a hook .\tA hook hangs .\n")


def test_wic_files(tmp_path):
    data = write(tmp_path / "dev.data.txt", WIC_DATA)
    gold = write(tmp_path / "dev.gold.txt", "F\nT\nT\n\n")
    table = parse_wic_files(data, gold)
    assert table.num_rows == 3
    assert table["label"].to_pylist() == [0, 1, 1]
    assert table["word"].to_pylist() == ["board", "circulate", "hook"]
    assert table["pos"].to_pylist() == ["N", "V", "N"]
    assert table["word_index_a"].to_pylist() == [2, 0, 5]
    assert table["word_index_b"].to_pylist() == [2, 4, 1]
    assert table["text_a"].to_pylist()[1] == "Circulate a rumor ."
    assert table["text_b"].to_pylist()[0] == "He nailed boards across the windows ."
    assert table["source_id"].to_pylist() == ["1", "2", "3"]
    assert table["example_id"].to_pylist() == [0, 1, 2]
    # The indices point at the target word in each sentence.
    for row in table.to_pylist():
        assert row["text_a"].split(" ")[row["word_index_a"]].lower().startswith(row["word"][:4])
        assert row["text_b"].split(" ")[row["word_index_b"]].lower().startswith(row["word"][:4])


def test_wic_without_gold_has_null_labels(tmp_path):
    data = write(tmp_path / "test.data.txt", WIC_DATA)
    table = parse_wic_files(data, None)
    assert table["label"].to_pylist() == [None, None, None]


def test_wic_crlf(tmp_path):
    data = write(tmp_path / "d.txt", WIC_DATA.replace("\n", "\r\n"))
    gold = write(tmp_path / "g.txt", "F\r\nT\r\nF\r\n")
    table = parse_wic_files(data, gold)
    assert table["text_b"].to_pylist()[2] == "A hook hangs ."
    assert table["label"].to_pylist() == [0, 1, 0]


def test_wic_gold_count_mismatch(tmp_path):
    data = write(tmp_path / "dev.data.txt", WIC_DATA)
    gold = write(tmp_path / "dev.gold.txt", "F\nT\n")
    message = str(input_error(parse_wic_files, data, gold))
    assert message.startswith(f"{gold}: 2 labels for 3 examples in {data}")


@pytest.mark.parametrize(("bad_line", "fragment"), [
    ("board\tN\t2-2\tRoom and board .\n", "expected 5 tab-separated fields, found 4"),
    ("board\tN\t2_2\tRoom and board .\tBoards .\n", "word indices '2_2' are not 'i-j'"),
    ("board\tN\t2-9\tRoom and board .\tBoards .\n", "word index 9 is outside the sentence 'Boards .'"),
    ("board\tN\t4-0\tRoom and board .\tBoards .\n", "word index 4 is outside the sentence 'Room and board .'"),
])
def test_wic_bad_data_line(tmp_path, bad_line, fragment):
    data = write(tmp_path / "dev.data.txt", WIC_DATA + bad_line)
    message = str(input_error(parse_wic_files, data, None))
    assert message.startswith(f"{data}, line 4: ")
    assert fragment in message


def test_wic_bad_gold_label(tmp_path):
    data = write(tmp_path / "dev.data.txt", WIC_DATA)
    gold = write(tmp_path / "dev.gold.txt", "F\nyes\nT\n")
    message = str(input_error(parse_wic_files, data, gold))
    assert message.startswith(f"{gold}, line 2: label 'yes' is not T or F")


def test_wic_release_zip(tmp_path):
    archive = tmp_path / "WiC_dataset.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("train/train.data.txt", "a\tN\t0-0\tA .\tA .\n")
        zf.writestr("train/train.gold.txt", "T\n")
        zf.writestr("dev/dev.data.txt", WIC_DATA)
        zf.writestr("dev/dev.gold.txt", "T\nF\nF\n")
        zf.writestr("test/test.data.txt", "x\tV\t0-1\tX it .\tWe x .\nbad line\n")
    dev = parse_wic_release_zip(archive, "dev")
    assert dev["label"].to_pylist() == [1, 0, 0]
    assert dev["word"].to_pylist() == ["board", "circulate", "hook"]
    train = parse_wic_release_zip(archive, "train")
    assert train["label"].to_pylist() == [1]
    message = str(input_error(parse_wic_release_zip, archive, "test"))
    assert message.startswith(f"{archive}:test/test.data.txt, line 2: ")
    with pytest.raises(InputFormatError, match=r"no validation/validation\.data\.txt in the archive"):
        parse_wic_release_zip(archive, "validation")


def test_build_wic_from_mirror_and_offline_error(tmp_path):
    mirror = tmp_path / "mirror"
    write(mirror / "wic" / "dev" / "dev.data.txt", WIC_DATA)
    write(mirror / "wic" / "dev" / "dev.gold.txt", "T\nT\nF\n")
    output = tmp_path / "out" / "wic_dev.parquet"
    build_wic("dev", find_in_mirror(mirror, "wic", "dev"), output, mirror=str(mirror), offline=True,
              download_dir=tmp_path / "dl", **WIC_RELEASE)
    assert pq.read_table(output)["label"].to_pylist() == [1, 1, 0]
    assert read_metadata(output)["source"] == f"mirror:{mirror / 'wic/dev/dev.data.txt'}"

    with pytest.raises(SourceUnavailableError) as info:
        build_wic("train", find_in_mirror(mirror, "wic", "train"), tmp_path / "out" / "wic_train.parquet",
                  mirror=str(mirror), offline=True, download_dir=tmp_path / "dl", **WIC_RELEASE)
    message = str(info.value)
    assert "corpus 'wic', split 'train'" in message
    assert f"mirror {mirror / 'wic/train/train.data.txt'}" in message
    assert f"{WIC_RELEASE['url']} (skipped: 'offline' is true)" in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message
    assert not (tmp_path / "out" / "wic_train.parquet").exists()
    assert not (tmp_path / "dl").exists()
    assert no_partials(tmp_path) == []
