"""No load in the workflow can run code from a file it reads (docs/security.md): the workflow's code, rules and
tools never unpickle, never ask transformers for a model's own code, and read YAML with safe loaders only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from support.paths import REPO

SCANNED = ("workflow_scripts", "rules", "Snakefile", "tools", "benchmarks", "scripts")

# Text that must appear in no scanned file (Python, rule files, shell).
FORBIDDEN_TEXT = {
    r"trust_remote_code\s*=\s*True": "runs a model's own Python code from the hub or its folder",
    r"weights_only\s*=\s*False": "torch.load of a full pickle runs code from the file",
    r"allow_pickle\s*=\s*True": "np.load of an object array unpickles it",
    r"yaml\.(unsafe_load|full_load|load_all)\b|\b(Unsafe|Full)Loader\b": "YAML tags can build Python objects",
    r"\b(c?[Pp]ickle|dill|joblib|shelve|marshal)\.loads?\b|read_pickle\b": "unpickling runs code from the file",
}


def scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        path = REPO / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in (".py", ".smk", ".sh") and p.is_file())
    return files


def test_the_scan_covers_the_workflow():
    names = {p.relative_to(REPO).as_posix() for p in scanned_files()}
    assert {"Snakefile", "rules/common.smk", "workflow_scripts/study/checks/__init__.py",
            "tools/label_maps.py"} <= names


@pytest.mark.parametrize("pattern", sorted(FORBIDDEN_TEXT))
def test_no_scanned_file_holds_a_code_running_load(pattern):
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for path in scanned_files()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(pattern, line)]
    assert found == [], f"{FORBIDDEN_TEXT[pattern]}:\n" + "\n".join(found)


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            owner = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
            yield node, owner, name, {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}


def test_every_python_load_call_is_a_safe_one():
    """What a text search cannot see: the arguments of each call (a loader named elsewhere, a call over lines)."""
    problems = []
    for path in scanned_files():
        if path.suffix != ".py":
            continue
        for node, owner, name, keywords in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            if owner == "yaml" and name == "load" and "SafeLoader" not in keywords.get("Loader", ""):
                problems.append(f"{where}: yaml.load without a SafeLoader (use yaml.safe_load)")
            if owner == "torch" and name == "load" and keywords.get("weights_only") != "True":
                problems.append(f"{where}: torch.load without weights_only=True (or use safetensors)")
            remote_code = keywords.get("trust_remote_code", "False")
            if name == "from_pretrained" and remote_code != "False":
                problems.append(f"{where}: from_pretrained with trust_remote_code={remote_code}")
            if isinstance(node.func, ast.Name) and name in ("eval", "exec"):
                problems.append(f"{where}: {name}() of text")
    assert problems == []


@pytest.mark.parametrize("source", [
    "yaml.load(text)",
    "yaml.load(handle, Loader=yaml.Loader)",
    "torch.load(path)",
    "torch.load(path, map_location='cpu', weights_only=flag)",
    "AutoModel.from_pretrained(name, trust_remote_code=allow)",
    "eval(expression)",
])
def test_the_call_check_finds_an_unsafe_call(tmp_path, monkeypatch, source):
    """The check itself, on a file holding one unsafe call (so that it cannot pass by finding nothing)."""
    (tmp_path / "workflow_scripts").mkdir()
    (tmp_path / "workflow_scripts" / "bad.py").write_text(source + "\n")
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    with pytest.raises(AssertionError):
        test_every_python_load_call_is_a_safe_one()
