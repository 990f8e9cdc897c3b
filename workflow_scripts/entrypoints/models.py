"""Entry points of the model and checkpoint rules (rules/models.smk)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from . import entry_point


@entry_point("model_card")
def model_card(smk: Any) -> None:
    from ..models.cards import describe_model

    describe_model(smk.wildcards.model, dict(smk.params.entry), smk.output[0], offline=smk.params.offline)


@entry_point("models_table")
def models_table(smk: Any) -> None:
    import json

    import pandas as pd

    from ..core.io import write_csv

    cards = [json.loads(Path(p).read_text()) for p in smk.input]
    frame = pd.DataFrame.from_records(cards).drop(columns=["special_tokens"])
    write_csv(frame, smk.output[0])
    logging.getLogger(__name__).info("%d models", len(frame))


@entry_point("pretrained_checkpoint")
def pretrained_checkpoint(smk: Any) -> None:
    from ..models.checkpoints import make_pretrained
    from ..models.locations import model_location

    entry = dict(smk.params.entry)
    make_pretrained(smk.wildcards.model, model_location(smk.wildcards.model, entry),
                    Path(smk.output[0]).parent, revision=entry.get("revision"))


@entry_point("random_checkpoint")
def random_checkpoint(smk: Any) -> None:
    from ..models.checkpoints import make_random
    from ..models.locations import model_location

    entry = dict(smk.params.entry)
    make_random(smk.wildcards.model, model_location(smk.wildcards.model, entry), Path(smk.output[0]).parent,
                smk.params.seed, revision=entry.get("revision"), offline=smk.params.offline)
