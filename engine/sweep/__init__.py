"""Sweeps: rules x perturbations declared in a file, run as dask tasks into a resumable zarr store.

A sweep file (TOML or YAML)::

    seed = 0
    store = "results/glue.zarr"

    [input]                       # or [[inputs]] with a `name` each
    path = "data/vnr_glue.csv"
    missing = "listwise"          # level, missing, weights, groups as in `votebench rank`
                                  # (weights: "groups" or a table {task = weight}); also meta, lower_is_better = [tasks],
                                  # and the loader options format, metric, filter, split, perturbation

    [[rules]]
    name = "borda"
    [[rules]]
    name = "promethee2"
    label = "promethee-linear"     # a rule may appear several times with different options
    options = { preference = "linear_indifference" }

    [[perturbations]]
    kind = "bootstrap"             # resample an axis with replacement
    over = "tasks"                 # tasks | systems | instances
    replicates = 200
    block = 50                     # replicates per task (and per store chunk); omitted: sized from the
                                   # cluster with --scheduler (engine.sweep.sizing), else 50

    [[perturbations]]
    kind = "subsets"               # Colombo's task subsets: tau(subset ranking, full ranking)
    sizes = [2, 4, 8]
    repeats = 100

    [[perturbations]]
    kind = "grid"                  # full-data ranking for every point of a parameter grid
    rule = "optimality_gap"
    params = { gamma = [0.8, 0.9, 0.95] }

    [[perturbations]]
    kind = "manipulation"          # Colombo et al. 2022 section 4.2 on synthetic Gumbel benchmarks (no input)
    variants = ["mean:task", "borda:one", "borda:two"]   # the default: sigma_mean, sigma_l, sigma_2l
    phis = [0.05, 0.1, 0.3]
    n_corrupted = [0, 5, 10, 15, 20]                     # default 0..n_tasks
    n_systems = 20                 # also n_tasks, n_instances (20), corrupt_location, scale (1), options = {...}
    repeats = 20
    block = 10

    [[perturbations]]
    kind = "rescaling"             # section 4.3: one (reversed) task rescaled by each factor
    factors = [1, 2, 5, 10]
    reversed_task = true           # same keys as manipulation otherwise (no n_corrupted)

The store holds one group per input and perturbation (``<input>/<name>``),
each an xarray Dataset with named dims (``rule``, ``replicate``,
``subset_size``, ``point``, ``system``) and a ``done`` flag per block.

The synthetic kinds ``manipulation`` and ``rescaling`` read no input (a sweep
made only of them needs no ``[input]``): each is stored once, in group
``synthetic/<name>`` (so no input may be called ``synthetic``), as
:func:`engine.labelled.robustness.manipulation_curve` / :func:`~engine.labelled.robustness.rescaling_curve`
compute it with the sweep's ``seed``: ``error`` (normalized Kendall distance to
the ground truth) and ``tau`` with dims (``rule``, ``phi``, ``n_corrupted`` or
``factor``, ``replicate``), coords ``level`` and ``paper_name`` per rule, and
``done`` (``rule``, ``block``).  The ``rule`` dim holds the perturbation's own
``variants`` (``"rule:level"`` strings, default Colombo's sigma_mean, sigma_l,
sigma_2l), not the sweep's ``[[rules]]``: the paper's experiment compares
aggregation levels, which the sweep rules (and their input-dependent options)
do not describe; ``options`` (kernel options) applies to every variant.  One
block is one variant and ``block`` replicates, and equals the same replicates
of the direct call whatever the block size; the mean and std over replicates are
not stored (``ds.error.mean("replicate")``).  Blocks
are written (zarr region writes) as they finish; re-running the same sweep on
the same store computes only the blocks not yet done, so an interrupted sweep
resumes without losing or duplicating replicates.  The root attributes record
the provenance: engine version, the sweep config (which holds every option that
changes a result: rules and their options, loader options, directions, weights),
seed, the checksum of every input (``inputs``) and of the sidecar read with it
(``sidecars``); a store is resumed only when all of them are equal and every
group has the variables, shapes, coordinates and attributes the sweep would
create, else the run stops with one line.  A new store is built under a
temporary name beside it and renamed into place when complete, so a run killed
at any moment leaves no store or a resumable one; a writer holds a lock
(:class:`engine.io.files.WriterLock`), and a second process writing the same
store stops with a message naming the first.

On a cluster (``run_sweep(cfg, scheduler="tcp://...")`` or ``client=``) the
client never holds the scores: every task carries a :class:`Source` (the
input's path or fsspec URL, loader options, sha256) and the worker running it
opens the input itself, once per worker process (:func:`load_source`), checking
the checksum.  The client only writes the finished blocks, so a killed worker
costs its running blocks (dask reruns them elsewhere) and a killed client the
blocks not yet written (a re-run resumes).

The package: :mod:`engine.sweep.config` (reading and validating a sweep
file), :mod:`engine.sweep.kinds` (what a perturbation kind declares, the base of
its live dashboard state, and the built-in kinds, one module each, registered in
:data:`KINDS` with :func:`register_kind`), :mod:`engine.sweep.runner` (planning
the blocks and running them; one bootstrap of one input, here, on a cluster or
into a store: ``votebench bootstrap``) and :mod:`engine.sweep.results` (the
results store).  Inputs, checksums, the
client connection and one-off cluster runs are :mod:`engine.distributed`'s,
re-exported here.
"""


from engine.sweep.config import (
    SYNTHETIC_GROUP,
    SYNTHETIC_KINDS,
    SweepConfig,
    check_weights,
    direction_notes,
    load_config,
    parse_config,
)
from engine.sweep.kinds import KINDS, Block, Kind, PlanContext, SpecCheck, aggregate_options, get_kind, register_kind
from engine.sweep.results import damaged_store, open_results, readable_results, resolve_store, storage_failure
from engine.sweep.runner import bootstrap_input, check_bootstrap_memory, check_memory, plan_sweep, run_sweep

__all__ = [
    "Block", "KINDS", "Kind", "PlanContext", "SYNTHETIC_GROUP", "SYNTHETIC_KINDS", "SpecCheck", "SweepConfig",
    "aggregate_options", "bootstrap_input", "check_bootstrap_memory", "check_memory", "check_weights", "direction_notes",
    "damaged_store", "get_kind", "load_config", "open_results",
    "parse_config", "readable_results", "storage_failure", "plan_sweep", "register_kind", "resolve_store", "run_sweep",
]

