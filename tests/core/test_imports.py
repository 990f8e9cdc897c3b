"""The shape of the code: no import cycle in workflow_scripts, no test importing another test, small modules.

The import graph is static: every ``import`` / ``from ... import`` in a module's source, those inside
functions included (they run sooner or later) and those under ``if TYPE_CHECKING:`` too (they never run,
but a type named that way still ties the two modules together: a circle of them is a circle in the design),
relative ones resolved. A package's ``__init__`` is a node of its own: importing
``pkg.mod`` adds an edge to ``pkg.mod`` only, ``from pkg import name`` one to ``pkg`` unless ``name``
is a module of it. The cycle check adds what Python does besides (:func:`with_package_inits`): importing
``pkg.sub.mod`` first runs ``pkg/sub/__init__.py``, so a package whose ``__init__`` imports a module that imports
one of the package's modules is a cycle too.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from support.paths import REPO
from workflow_scripts.runtime.import_graph import import_statements, package_modules

PACKAGE = REPO / "workflow_scripts"
TESTS = REPO / "tests"

MAX_LINES = 400
# The folders whose files are held to MAX_LINES, with the files' pattern: the package's modules, the tests
# (tests/support and the conftest.py files included), the benchmarks, the tools and the rule files.
SIZED_FOLDERS = ((PACKAGE, "*.py"), (TESTS, "*.py"), (REPO / "benchmarks", "*.py"), (REPO / "tools", "*.py"),
                 (REPO / "rules", "*.smk"))
# Files allowed more than MAX_LINES lines, each with the reason (path from the repository root, e.g.
# "workflow_scripts/core/io.py" or "tests/data/test_glue.py" -> why).
OVERSIZED: dict[str, str] = {}


# --- the import graph ------------------------------------------------------------------------------


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted ``name`` that is a module of the package (None: outside it)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (statically, as the code digests read them:
    workflow_scripts/runtime/import_graph.py; see the module docstring)."""
    modules = package_modules(package_dir)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for base, names in import_statements(name, path.name == "__init__.py", [tree], filename=str(path)):
            if not names:
                targets = [_resolve(base, modules)]
            else:
                targets = [f"{base}.{alias}" if f"{base}.{alias}" in modules else _resolve(base, modules)
                           for alias in names]
            graph[name].update(t for t in targets if t is not None and t != name)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles found by a depth-first search, one per back edge, each as a path [a, b, ..., a]."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        colour[node] = grey
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if colour.get(target, white) == grey:
                cycles.append(stack[stack.index(target):] + [target])
            elif colour.get(target, white) == white:
                visit(target)
        stack.pop()
        colour[node] = black

    for node in sorted(graph):
        if colour[node] == white:
            visit(node)
    return cycles


def with_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with an edge from each importer to every package on the way to what it imports (Python runs those
    packages' ``__init__`` first), but for the importer's own packages, already run when it runs."""
    full = {module: set(targets) for module, targets in graph.items()}
    for module, targets in graph.items():
        own = {".".join(module.split(".")[:end]) for end in range(1, module.count(".") + 2)}
        for target in targets:
            parts = target.split(".")
            full[module].update(package for package in (".".join(parts[:end]) for end in range(1, len(parts)))
                                if package in graph and package not in own)
    return full


def test_workflow_scripts_has_no_import_cycle():
    graph = with_package_inits(import_graph(PACKAGE))
    assert len(graph) > 20 and any(graph.values()), "the graph of workflow_scripts looks empty"
    cycles = find_cycles(graph)
    assert not cycles, "import cycles in workflow_scripts:\n" + "\n".join("  " + " -> ".join(c) for c in cycles)


# --- which way imports run (docs/contributing.md) ------------------------------------------------------

ANALYSIS_STAGES = ("surface", "syntax", "finetune_effects", "ablation")
# Packages held to a list of what they may import (besides themselves).
MAY_IMPORT = {"core": set(), "data": {"core"}, "probing": {"core", "attention"}, "report": {"core"}}


def _package(module: str) -> str:
    """The top-level package of a module of workflow_scripts ("workflow_scripts.syntax.probes.mst" -> "syntax")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """"a -> b (why)" for every import that runs the wrong way: out of a package's list (MAY_IMPORT), from one
    analysis stage to another, or into study/ or runtime/ from anywhere but the entry points."""
    wrong = []
    for module, targets in sorted(graph.items()):
        package = _package(module)
        for target in sorted(targets):
            other = _package(target)
            if other == package:
                continue
            if package in MAY_IMPORT and other not in MAY_IMPORT[package]:
                wrong.append(f"{module} -> {target} ({package}/ imports only {sorted(MAY_IMPORT[package])})")
            if package in ANALYSIS_STAGES and other in ANALYSIS_STAGES:
                wrong.append(f"{module} -> {target} (an analysis stage imports another)")
            if other == "study" and package != "entrypoints":
                wrong.append(f"{module} -> {target} (only the entry points import study/)")
            if other == "runtime" and package != "entrypoints":
                wrong.append(f"{module} -> {target} (only the entry points import runtime/, the run's machinery)")
        wrong += [f"{module} -> {target} (the forecast is a leaf: the run imports study/estimates/ instead)"
                  for target in sorted(targets) if _in_forecast(target) and not _in_forecast(module)]
    return wrong


def _in_forecast(module: str) -> bool:
    """Whether a module is the forecast's (``workflow_scripts.study.forecast`` and below)."""
    return module.split(".")[1:3] == ["study", "forecast"]


def test_imports_run_from_higher_layers_to_lower_ones_only():
    wrong = layer_violations(import_graph(PACKAGE))
    assert not wrong, "imports that run the wrong way (docs/contributing.md):\n" + "\n".join(f"  {w}" for w in wrong)


def test_the_layer_check_finds_each_kind_of_wrong_import():
    graph = {"pkg.core.io": {"pkg.data.ud"}, "pkg.report.summary": {"pkg.study.stages", "pkg.core.io"},
             "pkg.ablation.found": {"pkg.syntax.dependency", "pkg.probing.model"},
             "pkg.probing.model": {"pkg.attention.reader"}, "pkg.entrypoints.syntax": {"pkg.study.plan"},
             "pkg.finetune.tables": {"pkg.runtime.failures"}, "pkg.entrypoints.finetune": {"pkg.runtime.failures"},
             "pkg.study.plans.attention": {"pkg.study.forecast.sizes", "pkg.study.estimates.sizes"},
             "pkg.study.forecast.plan": {"pkg.study.forecast.text", "pkg.study.estimates.memory"}}
    assert layer_violations(graph) == [
        "pkg.ablation.found -> pkg.syntax.dependency (an analysis stage imports another)",
        "pkg.core.io -> pkg.data.ud (core/ imports only [])",
        "pkg.finetune.tables -> pkg.runtime.failures (only the entry points import runtime/, the run's machinery)",
        "pkg.report.summary -> pkg.study.stages (report/ imports only ['core'])",
        "pkg.report.summary -> pkg.study.stages (only the entry points import study/)",
        "pkg.study.plans.attention -> pkg.study.forecast.sizes (the forecast is a leaf: the run imports "
        "study/estimates/ instead)",
    ]


def test_no_rule_file_imports_the_forecast():
    # The Snakefile and the rule files are the run's path too; the import graph above covers the package only.
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    assert len(files) > 5
    importing = [path.name for path in files
                 if re.search(r"study\.forecast\b|study import forecast\b", path.read_text(encoding="utf-8"))]
    assert not importing, f"the forecast is a leaf, but these import it: {importing}"


# --- the cycle finder on a package written here ------------------------------------------------------


def _write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "fake"


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_relative_import(tmp_path):
    package = _write_package(tmp_path, {
        "fake/__init__.py": "",
        "fake/sub/__init__.py": "",
        "fake/sub/patterns.py": "import numpy\n\ndef classify():\n    from .pattern_cnn import predict\n",
        "fake/sub/pattern_cnn.py": "from .patterns import THRESHOLDS\nfrom ..core import io\n",
        "fake/core/__init__.py": "",
        "fake/core/io.py": "import os\n",
    })
    graph = import_graph(package)
    assert graph["fake.sub.patterns"] == {"fake.sub.pattern_cnn"}
    assert graph["fake.sub.pattern_cnn"] == {"fake.sub.patterns", "fake.core.io"}
    cycles = find_cycles(graph)
    assert cycles == [["fake.sub.pattern_cnn", "fake.sub.patterns", "fake.sub.pattern_cnn"]]


def test_a_cycle_through_a_package_init_is_found():
    # pkg.revisions imports pkg.checks.names, whose package's __init__ imports pkg.revisions: importing
    # pkg.revisions first fails in Python, though no module imports the other's module directly.
    graph = {"pkg": set(), "pkg.revisions": {"pkg.checks.names"}, "pkg.checks": {"pkg.revisions"},
             "pkg.checks.names": set()}
    assert find_cycles(graph) == []
    assert find_cycles(with_package_inits(graph)) == [["pkg.checks", "pkg.revisions", "pkg.checks"]]
    assert with_package_inits({"pkg": set(), "pkg.checks": {"pkg.checks.names"}, "pkg.checks.names": set()}) == {
        "pkg": set(), "pkg.checks": {"pkg.checks.names"}, "pkg.checks.names": set()}


def test_the_cycle_finder_resolves_every_form_of_import(tmp_path):
    package = _write_package(tmp_path, {
        "fake/__init__.py": "from .core import errors\n",
        "fake/core/__init__.py": "LIMIT = 3\n",
        "fake/core/errors.py": "",
        "fake/core/io.py": "from . import errors\nfrom . import LIMIT\n",
        "fake/stage/__init__.py": "",
        "fake/stage/a.py": ("import fake.core.io\nimport fake.core.errors as e\nfrom fake.core import LIMIT\n"
                            "from fake.core.io import write\nfrom .. import core\nfrom ..core.errors import Bad\n"
                            "import pandas\nfrom os import path\n"),
        "fake/stage/typed.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n"
                                "else:\n    from . import a\n"),
    })
    graph = import_graph(package)
    assert graph["fake"] == {"fake.core.errors"}
    assert graph["fake.core.io"] == {"fake.core.errors", "fake.core"}
    assert graph["fake.stage.a"] == {"fake.core.io", "fake.core.errors", "fake.core"}
    assert graph["fake.stage.typed"] == {"fake.stage.a"}
    assert find_cycles(graph) == []
    # The package __init__ is a node of its own: a cycle through it is found too.
    (package / "core" / "__init__.py").write_text("from .io import write\n")
    assert find_cycles(import_graph(package)) == [["fake.core", "fake.core.io", "fake.core"]]
    # An import for type checking only is an edge too: a circle through it is found.
    (package / "stage" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from .typed import T\n")
    assert find_cycles(import_graph(package))[1:] == [["fake.stage.a", "fake.stage.typed", "fake.stage.a"]]


# --- the tests' own imports --------------------------------------------------------------------------


def _imported_modules(path: Path, local: set[str]) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in a test file. Relative imports keep their leading dots;
    ``from X import name`` also yields ``X.name`` where X is relative or a folder of tests/ (where
    ``name`` may be a test module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found.append((node.lineno, module))
            if node.level or (node.module or "").split(".")[0] in local:
                found += [(node.lineno, module + ("" if module.endswith(".") else ".") + alias.name)
                          for alias in node.names]
    return found


def imports_of_test_modules(paths: list[Path], local: set[str], root: Path) -> list[str]:
    """"file:line: imports module" for every import, in ``paths``, of a module named test_* or conftest."""
    offending = []
    for path in paths:
        for line, module in _imported_modules(path, local):
            parts = [part for part in module.split(".") if part]
            if any(part == "conftest" or part.startswith("test_") for part in parts):
                offending.append(f"{path.relative_to(root)}:{line}: imports {module}")
    return offending


def test_no_test_imports_another_test_file_or_a_conftest():
    local = {path.name for path in TESTS.iterdir() if path.is_dir()}
    offending = imports_of_test_modules(sorted(TESTS.rglob("*.py")), local, REPO)
    assert not offending, ("tests share builders through tests/support and fixtures through conftest.py, "
                           "never by importing a test file or a conftest:\n" + "\n".join(offending))


def test_the_import_scan_sees_every_way_of_importing_a_test_module(tmp_path):
    bad = tmp_path / "test_bad.py"
    bad.write_text("import conftest\nfrom test_surface import write_dump\nfrom conftest import REPO\n"
                   "def f():\n    import surface.test_statistics\n    from support import test_helpers\n"
                   "from . import test_other\n")
    good = tmp_path / "test_good.py"
    good.write_text("from support.dumps import write_dump\nfrom scipy.stats import ttest_rel\n"
                    "from workflow_scripts.core import stats\nimport pytest\n")
    found = imports_of_test_modules([bad, good], {"support", "surface"}, tmp_path)
    assert sorted(entry.split(":", 1)[1] for entry in found) == [
        "1: imports conftest", "2: imports test_surface", "3: imports conftest",
        "5: imports surface.test_statistics", "6: imports support.test_helpers", "7: imports .test_other"]


def test_test_file_basenames_are_unique():
    # pytest imports each test file by its basename (the default "prepend" import mode).
    counts = Counter(path.name for path in TESTS.rglob("test_*.py"))
    clashes = {name: sorted(str(p.relative_to(REPO)) for p in TESTS.rglob(name))
               for name, n in counts.items() if n > 1}
    assert not clashes, f"test files with the same basename in different folders: {clashes}"


# --- module sizes ----------------------------------------------------------------------------------


def _module_lines() -> dict[str, int]:
    """Path from the repository root -> number of lines, for every file of SIZED_FOLDERS."""
    return {path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for folder, pattern in SIZED_FOLDERS for path in sorted(folder.rglob(pattern))}


def test_modules_are_at_most_max_lines_long():
    lines = _module_lines()
    empty = [f"{folder.name}/{pattern}" for folder, pattern in SIZED_FOLDERS
             if not any(name.startswith(f"{folder.name}/") for name in lines)]
    assert not empty, f"no file found as {empty}: moved? (update SIZED_FOLDERS)"
    too_long = {name: n for name, n in sorted(lines.items()) if n > MAX_LINES and name not in OVERSIZED}
    assert not too_long, (f"modules over {MAX_LINES} lines (split them along their seams, or list them in "
                          "OVERSIZED with the reason): " + ", ".join(f"{m} ({n})" for m, n in too_long.items()))


def test_the_oversized_list_is_current_and_gives_reasons():
    lines = _module_lines()
    stale = sorted(name for name in OVERSIZED if lines.get(name, 0) <= MAX_LINES)
    assert not stale, f"OVERSIZED lists modules that are gone or no longer over {MAX_LINES} lines: {stale}"
    unexplained = sorted(name for name, reason in OVERSIZED.items() if not reason.strip())
    assert not unexplained, f"OVERSIZED entries without a reason: {unexplained}"
