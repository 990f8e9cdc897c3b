"""The study-wide table of attention dumps: size, truncation and cost of every dump."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.io import read_metadata, write_csv
from ..core.subjects import DEFAULT_SIGNAL, subject_name
from .extract import read_dump_manifest


def summarize_dumps(dump_manifests: list[str | Path], token_tables: list[str | Path],
                    output: str | Path) -> pd.DataFrame:
    truncation = {str(p): read_metadata(p) for p in token_tables}
    records = []
    for path in dump_manifests:
        manifest = read_dump_manifest(path)
        parts = Path(path).parts
        corpus, split = parts[-3], parts[-2]
        tokens = truncation.get(manifest["token_table"], {})
        signal = manifest.get("signal", DEFAULT_SIGNAL)  # dumps made before signals hold attention weights
        records.append({
            # The subject, as every analysis table names it (MODEL@SIGNAL for a signal other than attention).
            "model": subject_name(manifest["model"], signal), "signal": signal,
            "checkpoint": manifest["checkpoint"], "corpus": corpus, "split": split,
            "input_protocol": manifest.get("input_protocol", tokens.get("input_protocol")),
            "examples": manifest["examples"], "tokens": manifest["tokens"],
            "truncated_examples": tokens.get("truncated_examples"),
            "words_without_tokens": tokens.get("words_without_tokens"),
            "shards": len(manifest["shards"]), "bytes": manifest["bytes"],
            "bytes_per_value": round(manifest["bytes_per_value"], 4), "seconds": manifest["seconds"],
            "device": manifest["device"],
        })
    frame = pd.DataFrame.from_records(records)
    write_csv(frame, output)
    return frame
