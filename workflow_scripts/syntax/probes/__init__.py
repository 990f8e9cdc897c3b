"""The syntax stage's dependency probes of [C] §5 (METHODS 7.5): the probe jobs (:mod:`.training`), the maximum
spanning tree of one head (:mod:`.mst`) and their per-sentence scores and table (:mod:`.tables`). The probes'
inputs and models are the library :mod:`workflow_scripts.probing`."""
