"""Dependency probes of [C] §5 (METHODS 7.5): probe inputs (:mod:`.features`), the trained probes
and baselines (:mod:`.training`), the maximum spanning tree of one head (:mod:`.mst`) and their
per-sentence scores and table (:mod:`.tables`)."""
