"""Are two results folders' tables the same? Byte for byte, or else numerically.

    python tools/compare_tables.py RESULTS_A RESULTS_B [--rtol 1e-9]

Compares every ``tables/*.csv`` the two folders share: ``identical`` (same bytes), ``equal`` (same
columns, rows and text; floats within ``--rtol``; each folder's own path read as ``<results>``; the
``--ignore`` columns, e.g. wall-clock times, left out), or ``different`` (with the first column that differs).
Tables only one folder has are listed. Exits 1 if any shared table is different. Used to show that a
restructuring of the code leaves a study's outputs unchanged (docs/contributing.md).

``--rows-of-a`` compares B's rows of the subjects A has only: where a table has ``model`` and ``checkpoint``
columns (or ``first_``/``second_`` ones), B's rows of another (model, checkpoint), and where it has a ``role``
column, of another role, are left out before comparing, so that a study that measures more checkpoints and roles
(roles.finetuned, docs/roles.md) is compared with the study of before on the rows they share; the verdict says how
many rows were left out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def compare_frames(a: pd.DataFrame, b: pd.DataFrame, rtol: float) -> str | None:
    """None when equal (floats within rtol), else what differs first."""
    if list(a.columns) != list(b.columns):
        return f"columns differ: {sorted(set(a.columns) ^ set(b.columns)) or 'order'}"
    if len(a) != len(b):
        return f"{len(a)} rows vs {len(b)}"
    for column in a.columns:
        x, y = a[column], b[column]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            if not np.allclose(x.to_numpy(float), y.to_numpy(float), rtol=rtol, atol=0.0, equal_nan=True):
                worst = np.nanmax(np.abs(x.to_numpy(float) - y.to_numpy(float)))
                return f"column {column!r}: values differ (largest difference {worst:.3g})"
        elif not x.astype(str).equals(y.astype(str)):
            row = int(np.flatnonzero(x.astype(str).to_numpy() != y.astype(str).to_numpy())[0])
            return f"column {column!r}, row {row}: {x.iloc[row]!r} vs {y.iloc[row]!r}"
    return None


def _read(folder: Path, name: str, ignore: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.read_csv(folder / "tables" / name, keep_default_na=False, na_values=[""])
    frame = frame.drop(columns=[c for c in ignore if c in frame.columns])
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):  # paths inside the folder name the folder itself
            frame[column] = frame[column].astype(str).str.replace(str(folder), "<results>", regex=False)
    return frame


SUBJECT_COLUMNS = (("model", "checkpoint"), ("first_model", "first_checkpoint"), ("second_model", "second_checkpoint"))


def rows_of(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """B's rows whose every (model, checkpoint) A has (the columns of SUBJECT_COLUMNS both tables have), and how
    many B had besides."""
    keep = pd.Series(True, index=b.index)
    shared = set(a.columns) & set(b.columns)
    for model, checkpoint in SUBJECT_COLUMNS:
        if {model, checkpoint} <= shared:
            # the atlas: a subject's roles, each (model, checkpoint, role) A has
            columns = [model, checkpoint, *(["role"] if "role" in shared else [])]
            known = set(zip(*(a[c].astype(str) for c in columns)))
            keep &= np.array([key in known for key in zip(*(b[c].astype(str) for c in columns))], dtype=bool)
    return b[keep].reset_index(drop=True), int((~keep).sum())


def compare_folders(a: Path, b: Path, rtol: float = 1e-9, ignore: tuple[str, ...] = (),
                    rows_of_a: bool = False) -> dict[str, str]:
    """Table name -> 'identical', 'equal', 'different: ...', 'only in A' or 'only in B'."""
    for folder in (a, b):
        if not (folder / "tables").is_dir():
            raise SystemExit(f"{folder}: no tables/ folder here; give the results folder of a study "
                             "(the one that holds tables/, data/, attention/ ...)")
    names_a = {p.name for p in (a / "tables").glob("*.csv")}
    names_b = {p.name for p in (b / "tables").glob("*.csv")}
    verdicts = {}
    for name in sorted(names_a | names_b):
        if name not in names_b:
            verdicts[name] = "only in A"
        elif name not in names_a:
            verdicts[name] = "only in B"
        elif (a / "tables" / name).read_bytes() == (b / "tables" / name).read_bytes():
            verdicts[name] = "identical"
        else:
            frame_a, frame_b, added = _read(a, name, ignore), _read(b, name, ignore), 0
            if rows_of_a:
                frame_b, added = rows_of(frame_a, frame_b)
            problem = compare_frames(frame_a, frame_b, rtol=rtol)
            verdict = "equal" if problem is None else f"different: {problem}"
            verdicts[name] = verdict + (f" ({added} rows of other subjects in B left out)" if added else "")
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="a results folder")
    parser.add_argument("b", type=Path, help="another results folder")
    parser.add_argument("--rtol", type=float, default=1e-9, help="relative tolerance for floats (default 1e-9)")
    parser.add_argument("--ignore", default="", help="comma-separated columns to leave out (e.g. wall-clock times)")
    parser.add_argument("--rows-of-a", action="store_true",
                        help="compare only B's rows of the (model, checkpoint) subjects A has")
    args = parser.parse_args(argv)
    ignore = tuple(c for c in args.ignore.split(",") if c)
    verdicts = compare_folders(args.a, args.b, args.rtol, ignore, rows_of_a=args.rows_of_a)
    width = max((len(n) for n in verdicts), default=0)
    for name, verdict in verdicts.items():
        print(f"{name:<{width}}  {verdict}")
    shared = [v for v in verdicts.values() if not v.startswith("only")]
    print(f"{sum(v == 'identical' for v in shared)} identical, {sum(v.startswith('equal') for v in shared)} equal, "
          f"{sum(v.startswith('different') for v in shared)} different of {len(shared)} shared tables")
    return 1 if any(v.startswith("different") for v in shared) else 0


if __name__ == "__main__":
    sys.exit(main())
