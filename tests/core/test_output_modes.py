"""Outputs get the permissions a plain open() gives (0o666 less the umask), not tempfile's 0600.

On a cluster the results folder is shared by a group; an output only its writer can read breaks
every other member's run. workflow_scripts.core.io reads the umask once, at import, so each umask is
tried in a fresh interpreter that sets it first.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO

WRITER = r"""
import json, os, sys, tempfile
os.umask(int(sys.argv[2], 8))
sys.path.insert(0, sys.argv[3])
import pandas as pd
from workflow_scripts.core import io

out = sys.argv[1]
frame = pd.DataFrame({"a": [1, 2]})
io.write_table(frame, f"{out}/table.parquet", metadata={"k": 1})
io.write_csv(frame, f"{out}/table.csv")
io.write_json({"k": 1}, f"{out}/obj.json")
with io.atomic_path(f"{out}/nested/raw.bin") as tmp, open(tmp, "wb") as handle:
    handle.write(b"x")
# A writer that swaps in its own (0600) file by rename must not carry that mode to the output.
with io.atomic_path(f"{out}/swapped.bin") as tmp:
    fd, other = tempfile.mkstemp(dir=out)
    os.write(fd, b"y")
    os.close(fd)
    os.replace(other, tmp)
umask_after = os.umask(0)
print(json.dumps({"umask_after_import": oct(umask_after), "file_mode": oct(io.FILE_MODE),
                  "modes": {os.path.relpath(os.path.join(d, f), out): oct(os.stat(os.path.join(d, f)).st_mode & 0o777)
                            for d, _, files in os.walk(out) for f in files}}))
"""


def _write_with_umask(tmp_path: Path, umask: int) -> dict:
    out = tmp_path / f"umask{umask:03o}"
    out.mkdir()
    result = subprocess.run([sys.executable, "-c", WRITER, str(out), f"{umask:o}", str(REPO)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)],
                         ids=["umask022", "umask002", "umask077"])
def test_atomic_outputs_get_the_mode_open_would_give(tmp_path, umask, expected):
    report = _write_with_umask(tmp_path, umask)
    assert report["modes"] == {name: oct(expected) for name in
                               ("table.parquet", "table.csv", "obj.json", "nested/raw.bin", "swapped.bin")}
    assert report["file_mode"] == oct(expected)
    # Reading the umask must not have changed it.
    assert report["umask_after_import"] == oct(umask)


def test_read_umask_leaves_the_process_umask_alone():
    from workflow_scripts.core import io

    before = os.umask(0o027)
    try:
        assert io._read_umask() == 0o027
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(before)


def test_an_interrupted_write_leaves_no_partial_file(tmp_path):
    from workflow_scripts.core.io import atomic_path

    with pytest.raises(RuntimeError), atomic_path(tmp_path / "out.csv") as tmp:
        assert tmp.name.startswith(".out.csv.") and tmp.name.endswith(".partial")
        assert stat.S_ISREG(tmp.stat().st_mode)
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
