"""Causal head checks (docs/ablation.md): disabling attention heads and scoring what changes."""
