"""The labelled layer: the score tensor as an xarray ``DataArray`` (system x task x instance) and the requests on it.

Modules here name dimensions, check and order labels, plan a request and hand numpy arrays to
:mod:`engine.kernels`; they compute nothing themselves.  :mod:`~engine.labelled.canonical` (the tensor),
:mod:`~engine.labelled.core` (planning and aggregation), :mod:`~engine.labelled.bootstrap`,
:mod:`~engine.labelled.robustness`, :mod:`~engine.labelled.comparison`, :mod:`~engine.io.battles`,
:mod:`~engine.labelled.paired_tests`, :mod:`~engine.labelled.agreement` and :mod:`~engine.labelled.synthetic`.
They import the kernels, the rule registry (:mod:`engine.rules`) and the base modules only (ARCHITECTURE.md).
"""
