"""tools/compare_tables.py: identical, numerically equal and different tables of two results folders."""

from __future__ import annotations

import importlib.util

import pytest

from support.paths import REPO

spec = importlib.util.spec_from_file_location("compare_tables", REPO / "tools" / "compare_tables.py")
compare_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_tables)


def write(folder, name, text):
    (folder / "tables").mkdir(parents=True, exist_ok=True)
    (folder / "tables" / name).write_text(text)


def test_verdicts_per_table(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "same.csv", "x,y\n1,a\n")
    write(b, "same.csv", "x,y\n1,a\n")
    write(a, "close.csv", "x\n0.30000000000000004\n")
    write(b, "close.csv", "x\n0.3\n")
    write(a, "far.csv", "x,y\n1.0,a\n")
    write(b, "far.csv", "x,y\n1.5,a\n")
    write(a, "text.csv", "x,y\n1,a\n2,b\n")
    write(b, "text.csv", "x,y\n1,a\n2,c\n")
    write(a, "extra.csv", "x\n1\n")
    verdicts = compare_tables.compare_folders(a, b)
    assert verdicts["same.csv"] == "identical"
    assert verdicts["close.csv"] == "equal"
    assert verdicts["far.csv"].startswith("different: column 'x'")
    assert verdicts["text.csv"] == "different: column 'y', row 1: 'b' vs 'c'"
    assert verdicts["extra.csv"] == "only in A"
    assert compare_tables.main([str(a), str(b)]) == 1
    assert "1 identical, 1 equal, 2 different of 4 shared tables" in capsys.readouterr().out


def test_equal_folders_exit_zero(tmp_path):
    for folder in (tmp_path / "a", tmp_path / "b"):
        write(folder, "t.csv", "x\n1\n")
    assert compare_tables.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0


def test_own_paths_and_ignored_columns_do_not_count(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "t.csv", f"path,seconds,x\n{a}/data/x.parquet,3.5,1\n")
    write(b, "t.csv", f"path,seconds,x\n{b}/data/x.parquet,9.0,1\n")
    assert compare_tables.compare_folders(a, b)["t.csv"].startswith("different: column 'seconds'")
    assert compare_tables.compare_folders(a, b, ignore=("seconds",))["t.csv"] == "equal"


def test_a_folder_without_tables_names_the_folder(tmp_path):
    write(tmp_path / "a", "t.csv", "x\n1\n")
    (tmp_path / "b").mkdir()
    with pytest.raises(SystemExit, match=r"b: no tables/ folder here; give the results folder"):
        compare_tables.compare_folders(tmp_path / "a", tmp_path / "b")
