"""The code a rule's job runs, as a digest: a change of behaviour in it reruns the job, an edit of comments does not.

Every rule runs the same script (``rules/scripts/entry.py``), so Snakemake's own ``code`` rerun trigger, which looks
at that script, never sees the stage code. The Snakefile therefore gives each rule a ``code`` param
(:func:`rule_digests`): a digest of

- the rule's entry point function (``@entry_point("<rule>")`` in ``workflow_scripts/entrypoints/<stage>.py``),
- what else its module defines at module level (helpers and constants the entry points share; not the other
  entry points), and
- every module of this package the entry point imports, followed through each module's own imports (at module
  level or inside functions: all of them count), with the packages' ``__init__`` modules on the way.

Each piece is read as its syntax tree, docstrings left out and without positions, so comments, docstrings,
blank lines and formatting change nothing; any other change (a constant, an operator, a renamed variable) changes
the digest of every rule whose entry point reaches it. ``workflow_scripts/entrypoints/__init__.py`` (how a job
starts, logs and reports a failure) is left out: it changes no output. Standard library, ``core.stages`` and
``import_graph`` (the static imports, which the tests of the code's shape read too) only.
What is read of each module (its tree's digest, its imports, its entry points) is kept in
``workflow_scripts/__pycache__/`` by the file's size and time, so that a run parses only the modules that changed
since the last (a second instead of none).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

from ..core.stages import entry_name_matches
from .import_graph import import_statements

PACKAGE = "workflow_scripts"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
ENTRY_POINTS = PACKAGE_DIR / "entrypoints"
HARNESS = f"{PACKAGE}.entrypoints"  # the package's __init__: how a job runs, not what it computes
CACHE = PACKAGE_DIR / "__pycache__" / "code_digests.json"
CACHE_VERSION = 1


def rule_digests(rule_names) -> dict[str, str]:
    """Rule name -> digest of the code its job runs (16 hex digits); rules with no entry point get none."""
    modules = _Modules()
    entries = {name: (path.stem, function) for path in sorted(ENTRY_POINTS.glob("*.py")) if path.name != "__init__.py"
               for name, function in modules.read(f"{HARNESS}.{path.stem}")["entries"].items()}
    digests = {}
    for rule in rule_names:
        found = _find(entries, rule)
        if found is None:
            continue
        stem, function = found
        module = f"{HARNESS}.{stem}"
        record = modules.read(module)
        digest = hashlib.sha256(f"{function}\n{record['shared']}".encode())
        for name in sorted(modules.closure(record["entry_imports"][function]) - {module, HARNESS}):
            digest.update(f"\n{name} {modules.read(name)['tree']}".encode())
        digests[rule] = digest.hexdigest()[:16]
    modules.save()
    return digests


def _find(entries: dict, rule: str):
    """As ``entrypoints.find_entry_point`` finds it: by name, else by a pattern the name matches whole."""
    if rule in entries:
        return entries[rule]
    return next((found for name, found in entries.items() if entry_name_matches(name, rule)), None)


class _Modules:
    """What is read of each module of the package, from the cache where its file has not changed."""

    def __init__(self) -> None:
        try:
            cached = json.loads(CACHE.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cached = {}
        self.cached = cached.get("modules", {}) if cached.get("version") == CACHE_VERSION else {}
        self.records: dict[str, dict] = {}
        self.changed = False

    def read(self, module: str) -> dict:
        if module not in self.records:
            path = _path(module)
            stat = path.stat()
            key = [stat.st_size, stat.st_mtime_ns]
            record = self.cached.get(module)
            if not record or record.get("key") != key:
                record = {"key": key, **_read_module(module, path)}
                self.changed = True
            self.records[module] = record
        return self.records[module]

    def closure(self, start) -> set[str]:
        seen: set[str] = set()
        todo = list(start)
        while todo:
            name = todo.pop()
            if name in seen or name == HARNESS or not _exists(name):
                continue
            seen.add(name)
            todo.extend(set(self.read(name)["imports"]) - seen)
        return seen

    def save(self) -> None:
        if not self.changed:
            return
        try:  # a cache: where it cannot be written (a read-only clone), the next run parses again
            CACHE.parent.mkdir(exist_ok=True)
            tmp = CACHE.with_name(f".{CACHE.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": CACHE_VERSION, "modules": {**self.cached, **self.records}}),
                           encoding="utf-8")
            os.replace(tmp, CACHE)
        except OSError:
            pass


def _read_module(module: str, path: Path) -> dict:
    """A module's tree digest, imports, and for an entry points module: each registered name's function digest
    and imports, and the digest of what the module shares (everything but the entry points)."""
    tree = _without_docstrings(ast.parse(path.read_text(encoding="utf-8")))
    record = {"tree": _hash(tree), "imports": sorted(_imports(module, tree.body))}
    entries, entry_imports, shared = {}, {}, []
    for node in tree.body:
        names = _registered(node)
        if not names:
            shared.append(node)
        for name in names:
            entries[name] = _hash(node)
    shared_imports = _imports(module, shared)
    for node in tree.body:
        if _registered(node):
            entry_imports[_hash(node)] = sorted(shared_imports | _imports(module, [node]))
    record.update(entries=entries, entry_imports=entry_imports,
                  shared=hashlib.sha256("".join(_dump(n) for n in shared).encode()).hexdigest())
    return record


def _registered(node: ast.stmt) -> list[str]:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    return [d.args[0].value for d in node.decorator_list
            if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "entry_point" and d.args
            and isinstance(d.args[0], ast.Constant) and isinstance(d.args[0].value, str)]


def _imports(module: str, nodes: list[ast.AST]) -> set[str]:
    """The modules of this package that ``nodes`` (of ``module``) import, with the packages above each (importing
    ``a.b.c`` runs ``a`` and ``a.b`` first)."""
    found: set[str] = set()
    for base, names in import_statements(module, _path(module).name == "__init__.py", nodes):
        for name in (base, *(f"{base}.{name}" for name in names)):
            if name.split(".")[0] == PACKAGE:
                parts = name.split(".")
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {name for name in found if _exists(name)}


def _path(module: str) -> Path:
    relative = Path(*module.split(".")[1:])
    folder = PACKAGE_DIR / relative
    return folder / "__init__.py" if folder.is_dir() else PACKAGE_DIR / relative.with_suffix(".py")


def _exists(module: str) -> bool:
    return _path(module).is_file()


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):  # docstrings say nothing the job does
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _hash(node: ast.AST) -> str:
    return hashlib.sha256(_dump(node).encode()).hexdigest()


def _dump(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)
