"""Process names a user can read in ``ps``, ``top`` and ``htop``: every job is named after its rule and wildcards
(``atlas extract_attention model=all-MiniLM-L6-v2 checkpoint=pretrained ...``), the warm server's stages after what
they hold (``atlas warm server: torch``).

Without this, since jobs start warm (warm_start.py), each job's copy showed the server's command line (``python3 -c
import sys; ... serve() .../jobs.sock 2812``), the same for every job: a process at 100% CPU for 17 minutes could not
be told from the others, nor killed alone. The well-kept ``setproctitle`` rewrites the command line that ``ps`` shows
and, through :func:`setproctitle.setthreadtitle`, the short name (``comm``, 15 bytes) that ``top`` shows by default:
there the rule's name, the most telling 15 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "atlas"
COMM_BYTES = 15  # Linux keeps 16 bytes of a thread's name, its terminating NUL included


def job_title(rule: str, wildcards: Mapping[str, object]) -> str:
    """'atlas RULE key=value ...', the wildcards in the rule's order."""
    return " ".join([PREFIX, rule, *(f"{key}={value}" for key, value in wildcards.items())])


def set_title(title: str, short: str | None = None) -> None:
    """Name this process ``title`` (``ps``'s command line) and ``short`` (``top``'s name; the title's second word by
    default, the rule's name for a job). Nothing where setproctitle is not installed (a job in a foreign env)."""
    try:
        import setproctitle
    except ImportError:
        return
    setproctitle.setproctitle(title)
    words = title.split()
    name = short if short is not None else (words[1] if len(words) > 1 else title)
    setproctitle.setthreadtitle(name.encode()[:COMM_BYTES].decode(errors="ignore"))


def current_title() -> str:
    """This process's title as ``ps`` shows it ('' without setproctitle)."""
    try:
        import setproctitle
    except ImportError:
        return ""
    return setproctitle.getproctitle()
