"""The imports of a module, read statically: what the code digests follow (code_digest.py) and what the tests of the
code's shape walk (tests/core/test_imports.py: no import cycle, imports running from higher layers to lower ones).

Every ``import`` / ``from ... import`` in the given syntax tree nodes counts, at any depth: those inside functions
(they run sooner or later) and those under ``if TYPE_CHECKING:`` (they never run, but a type named that way still ties
the two modules together). Relative imports are resolved against the module's own package. Standard library only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package in ``package_dir`` (``__init__``: the package)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def import_statements(module: str, is_package: bool, nodes: Iterable[ast.AST],
                      filename: str = "<module>") -> list[tuple[str, tuple[str, ...]]]:
    """Each import statement in ``nodes`` (at any depth) of ``module`` as (the absolute dotted name it imports from,
    the names it imports from it): ``import a.b`` -> ("a.b", ()); ``from a import b, c`` -> ("a", ("b", "c"));
    ``from . import x`` in module ``p.m`` -> ("p", ("x",)). ``is_package``: ``module`` is a package's ``__init__``
    (its relative imports start from itself). A relative import beyond the top-level package is a ValueError naming
    ``filename`` and the line."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    statements = []
    for node in (inner for top in nodes for inner in ast.walk(top)):
        if isinstance(node, ast.Import):
            statements += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if node.level > len(here):
                    raise ValueError(f"{filename}:{node.lineno}: relative import beyond the top-level package")
                base = ".".join(here[:len(here) - (node.level - 1)] + ([base] if base else []))
            statements.append((base, tuple(alias.name for alias in node.names)))
    return statements
