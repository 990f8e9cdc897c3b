"""Data layer: every corpus becomes one normalised Parquet table per split (METHODS 2, 6)."""
