"""Perturbation kinds of a sweep, one module each, registered in :data:`KINDS`.

=================  ==========================================  =====================================
kind               what a block computes                       module
=================  ==========================================  =====================================
``bootstrap``      replicate scores of one rule                :mod:`engine.sweep.kinds.bootstrap`
``subsets``        taus of random task subsets of one size     :mod:`engine.sweep.kinds.subsets`
``grid``           the ranking at one point of an option grid  :mod:`engine.sweep.kinds.grid`
``manipulation``   Colombo's synthetic curves (no input)       :mod:`engine.sweep.kinds.synthetic`
``rescaling``      (same module)                               :mod:`engine.sweep.kinds.synthetic`
=================  ==========================================  =====================================

A new kind is one module defining a :class:`~engine.sweep.kinds.base.Kind`
(its keys and validation, plan, block task, store writing and chunks, memory
estimate, dashboard summary and state, report section) and one line::

    register_kind(MY_KIND)

(a built-in kind is one line in the table below, which imports its module when the kind is first looked up)
"""

from engine.sweep.kinds.base import KINDS, TASK_BYTES, Block, Kind, PlanContext, SpecCheck, aggregate_options, get_kind, register_kind

# the built-in kinds, imported when first looked up (a sweep imports the kinds it runs)
for _name, _module, _record in (("bootstrap", "bootstrap", "BOOTSTRAP"), ("subsets", "subsets", "SUBSETS"),
                                ("grid", "grid", "GRID"), ("manipulation", "synthetic", "MANIPULATION"),
                                ("rescaling", "synthetic", "RESCALING")):
    KINDS.add_builtin(_name, f"engine.sweep.kinds.{_module}", _record)

__all__ = ["KINDS", "TASK_BYTES", "Block", "Kind", "PlanContext", "SpecCheck", "aggregate_options", "get_kind",
           "register_kind"]
