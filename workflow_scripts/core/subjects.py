"""Analysis subjects: a model read through one attention signal (attention.signals, docs/signals.md).

Every stage after extraction analyses subjects. The signal ``attention`` is the model itself, named as
the model; another signal is ``MODEL@SIGNAL``, with its own dumps, analyses and table rows but the
model's checkpoints, token tables and fine-tuning runs. The schema keeps '@' out of model names.
"""

from __future__ import annotations

SIGNAL_SEPARATOR = "@"
DEFAULT_SIGNAL = "attention"


def subject_name(model: str, signal: str) -> str:
    """The subject of ``model`` read through ``signal``: the model's name, or MODEL@SIGNAL."""
    return model if signal == DEFAULT_SIGNAL else f"{model}{SIGNAL_SEPARATOR}{signal}"


def split_subject(subject: str) -> tuple[str, str]:
    """(model, signal) of a subject name (a plain model name is its attention)."""
    model, _, signal = subject.partition(SIGNAL_SEPARATOR)
    return model, signal or DEFAULT_SIGNAL


def base_model(subject: str) -> str:
    """The model of a subject: whose checkpoints, token tables and fine-tuning runs it reads."""
    return split_subject(subject)[0]
