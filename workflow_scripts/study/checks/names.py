"""Config maps keyed by corpus or task name, and values that name one: each name must be one the config defines.

``attention.max_examples``, ``attention.corpora`` and ``finetune.per_task`` are looked up by name when a
job of that corpus or task is planned, so a key nobody defines (``wikki``) matches nothing and its setting
is silently dropped: every Wikipedia segment would be dumped. The schema cannot know the names (they come
from ``tasks:`` and ``treebanks:``), so :func:`keyed_name_problems` checks them after the defaults are filled
in and names the closest allowed name. A name that is defined but not selected by this study is allowed:
config.yaml caps every GLUE task's examples while the offline profile selects fewer tasks, and a study
config may be reused with another selection. The names a map may hold are those its jobs can use:
``glove`` is word vectors, not text, and a treebank's coreference windows (``gumwin``) are dumped by the
syntax stage, so neither is a corpus of ``attention.corpora``.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from ...data.corpora import WINDOW_SUFFIX
from ...data.registry import FIXED_CORPORA

TASK, TREEBANK, WINDOWS, WIKI, GLOVE = "task", "treebank", "windows", "wiki", "glove"
TEXT_CORPORA = (TASK, TREEBANK, WIKI)  # what attention.corpora dumps (and the surface analyses read)

# Why a name the config defines is refused where its kind is not allowed ({name}: the name as written).
NOT_ALLOWED = {
    GLOVE: "{name!r} is the GloVe word vectors, not text a model reads",
    WINDOWS: ("{name!r} is a treebank's coreference windows, which the syntax stage dumps (syntax.coref_treebank, "
              "syntax.coref_split)"),
    TREEBANK: "{name!r} is a treebank, not a task",
    WIKI: "{name!r} is the Wikipedia segments, not a task",
}


@dataclass(frozen=True)
class NameKey:
    """A config key whose entry names (``how='keys'``) or value (``how='value'``) must name a corpus of ``kinds``."""

    key: str
    how: str
    kinds: tuple[str, ...]


NAME_KEYS = (
    NameKey("attention.corpora", "keys", TEXT_CORPORA),
    # Token tables of the coreference windows are capped by their own name too (rule token_table's wc.corpus).
    NameKey("attention.max_examples", "keys", (TASK, TREEBANK, WINDOWS, WIKI)),
    NameKey("finetune.per_task", "keys", (TASK,)),
    NameKey("surface.corpus", "value", TEXT_CORPORA),
)


def defined_names(config: dict[str, Any]) -> dict[str, list[str]]:
    """Every corpus name the config defines, by kind (sorted), whether or not the study selects it."""
    treebanks = sorted(config["treebanks"])
    return {TASK: sorted(config["tasks"]), TREEBANK: treebanks, WINDOWS: [name + WINDOW_SUFFIX for name in treebanks],
            **{name: [name] for name in FIXED_CORPORA}}


def _listing(defined: dict[str, list[str]], kinds: tuple[str, ...]) -> str:
    """The names of ``kinds``, grouped: 'the tasks (cola, ...), the treebanks (ewt, gum) and wiki'."""
    labels = {TASK: "the tasks", TREEBANK: "the treebanks", WINDOWS: "their coreference windows"}
    parts = [f"{labels[kind]} ({', '.join(defined[kind]) or 'none'})" if kind in labels else ", ".join(defined[kind])
             for kind in kinds]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def name_problem(where: str, name: Any, kinds: tuple[str, ...], defined: dict[str, list[str]]) -> str | None:
    """Why ``name`` at config key ``where`` names none of ``kinds`` (with the closest allowed name), or None."""
    allowed = [n for kind in kinds for n in defined[kind]]
    if name in allowed:
        return None
    other = next((kind for kind, names in defined.items() if name in names), None)
    if other is not None:  # defined, but not a corpus this key's jobs can use
        why = NOT_ALLOWED.get(other, "{name!r} is a " + other).format(name=name)
        return f"config key '{where}': {why}; allowed here: {_listing(defined, kinds)}; remove it or fix the name"
    what, define = (("task", f"add an entry 'tasks.{name}'") if kinds == (TASK,) else
                    ("corpus", "add an entry under 'tasks' or 'treebanks'"))
    close = get_close_matches(str(name).lower(), allowed, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]!r}?" if close else "."
    return (f"config key '{where}': {name!r} is not a {what} the config defines{guess} Allowed here: "
            f"{_listing(defined, kinds)}. Fix the name, or {define} (docs/corpora.md)")


def keyed_name_problems(config: dict[str, Any]) -> list[str]:
    """A message for every name of :data:`NAME_KEYS` that names no corpus allowed there (empty when all do)."""
    defined = defined_names(config)
    problems = []
    for spec in NAME_KEYS:
        section, field = spec.key.split(".")
        held = config[section][field]
        if spec.how == "keys":
            found = (name_problem(f"{spec.key}.{name}", name, spec.kinds, defined) for name in held)
        else:
            found = iter([name_problem(spec.key, held, spec.kinds, defined)])
        problems += [problem for problem in found if problem]
    return problems
