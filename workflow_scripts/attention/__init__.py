"""Attention stage (METHODS 4-6): annotation, token tables, word alignment, dumps and their reader."""
