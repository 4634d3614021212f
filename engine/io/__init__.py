"""Input and output: the reader registry (:mod:`engine.io.readers`), zarr stores (:mod:`engine.io.store`),
streamed conversion (:mod:`engine.io.convert`) and atomic files (:mod:`engine.io.files`).

Modules here read bytes into the labelled score tensor of :mod:`engine.labelled.canonical` and
write results; they import the labelled layer and below, never the distributed layer, sweeps or the app.
"""
