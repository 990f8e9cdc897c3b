"""The attention-based dependency probe of [C] §5 (METHODS 7.5), as a library: its inputs (:mod:`.features`)
and the probes with their training and scoring (:mod:`.model`).

The syntax stage trains and scores the probes (``syntax/probes/``: jobs, maximum spanning trees, tables); the
ablation stage's found-heads check scores a trained probe on ablated attention. Both import this package and
neither imports the other (docs/contributing.md, "Which way imports run").
"""
