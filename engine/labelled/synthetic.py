"""Synthetic benchmarks with a known ground truth (Colombo et al. 2022, section 4).

Generator (section 4.1).  System ``n`` (``n = 1, ..., N``) has a performance
random variable ``G_n``, a Gumbel variable of location ``phi * n`` and scale
``beta = 1``; its scores ``s[n, t, k]`` on every task ``t`` and instance ``k``
are i.i.d. draws of ``G_n``, independent across systems.  Since
``G_{n+1} - G_n`` is logistic with mean ``phi``, system ``n + 1`` beats system
``n`` with probability >= 1/2: the ground-truth ranking is ``N > N-1 > ... > 1``
(higher score is better) and every judge's ranking is a noisy copy of it.

``phi`` is the paper's "dispersion parameter", but it acts as a *signal
strength*: ``phi = 0`` gives every system the same distribution (pure noise,
no ranking to recover) and larger ``phi`` gives a clearer consensus ("phi = 1
induces a strong consensus", section 4.1).  Low noise means **large** ``phi``.

Reading of the paper and choices made here:

* "Gumbel r.v. centered at phi * n": the *location* parameter is ``phi * n``
  (the mean is ``phi * n + gamma * beta``, gamma = Euler's constant).  The
  shift is common to all systems, so no ranking depends on this choice.
* Remark 1 says the rankings follow a Plackett-Luce model "with weights
  ``w_i = phi * n``"; for Gumbel utilities the Plackett-Luce weights are
  ``exp(phi * n / beta)`` (the exponential is missing in the text).  We sample
  the utilities, which is the definition the paper gives first.
* Corruption (section 4.2): the scores of a corrupted task are i.i.d. Gumbel
  draws "centered at -n", so that task's underlying ranking is the reverse of
  the truth.  The text says ``-n`` (not ``-phi * n``); the numbers it reports
  agree with ``-n`` (with ``-phi * n`` the mean aggregation could not be
  reversed before half of the tasks are corrupted, yet it reports errors
  above 0.75 with 2, 3 and 5 corrupted tasks out of 20).  The location is
  ``-corrupt_location * n`` with default ``corrupt_location = 1``.
* Rescaling (section 4.3): "we corrupt the scores of a given task by
  re-scaling them by a factor of x".  Rescaling a task that carries the true
  signal would only strengthen it, whereas the paper reports that a factor of
  2 already gives the mean aggregation an error above 90 % for small ``phi``
  and a factor of 7 for larger ``phi`` (Fig. 7: phi = 0.05 and 0.3).  Both
  numbers match rescaling a *corrupted* (reversed) task: the mean then flips
  once ``x > phi * (T - 1)`` (0.95 and 5.7 for T = 20).  ``rescale``
  therefore multiplies the corrupted tasks' scores.

Randomness comes from :mod:`engine.kernels.resample` streams: the Gumbel noise of
replicate ``b`` from stream ``"synthetic"``, and the choice and the scores of
the corrupted tasks from stream ``"corrupt"``.  The noise does not depend on
``phi`` (scores are ``phi * n + noise``), so runs with different ``phi`` share
their random numbers (common random numbers make curves over ``phi`` smooth),
and the corrupted tasks of ``n_corrupted = k`` are the first ``k`` tasks of one
random permutation per replicate (nested sets, shared draws).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from engine.dims import REPLICATE, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.kernels.resample import replicate_generator, replicate_ids
from engine.labelled.canonical import scores_from_array

__all__ = [
    "generate",
    "generate_array",
    "gumbel_noise",
    "corrupted_tasks",
    "corrupted_noise",
    "first_tasks_mask",
    "ground_truth",
    "system_labels",
]


def _check_sizes(n_systems: int, n_tasks: int, n_instances: int) -> None:
    if int(n_systems) < 2:
        raise VotebenchError(f"a synthetic benchmark needs at least 2 systems, got {n_systems}")
    if int(n_tasks) < 1 or int(n_instances) < 1:
        raise VotebenchError(f"a synthetic benchmark needs at least 1 task and 1 instance, got {n_tasks} and {n_instances}")


def _check_phi(phi: float) -> float:
    phi = float(phi)
    if not np.isfinite(phi) or phi < 0:
        raise VotebenchError(f"phi must be a finite number >= 0, got {phi}")
    return phi


def ground_truth(n_systems: int) -> np.ndarray:
    """Ground-truth scores ``1, ..., N`` of systems ``n = 1, ..., N`` (higher is better, no ties)."""
    return np.arange(1, int(n_systems) + 1, dtype=np.float64)


def system_labels(n_systems: int) -> list[str]:
    """Labels ``s01, s02, ...``: system ``n`` of the paper, zero-padded so that sorting keeps the truth order."""
    width = len(str(int(n_systems)))
    return [f"s{n:0{width}d}" for n in range(1, int(n_systems) + 1)]


def gumbel_noise(
    n_systems: int, n_tasks: int, n_instances: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray
) -> np.ndarray:
    """Standard Gumbel noise ``(B, T, K, S)`` of the uncorrupted scores (stream ``"synthetic"``).

    Replicate ``b`` draws its ``(T, K, S)`` block from its own generator, so any
    subset of replicates gives the same blocks.
    """
    _check_sizes(n_systems, n_tasks, n_instances)
    ids = replicate_ids(replicates)
    out = np.empty((ids.size, int(n_tasks), int(n_instances), int(n_systems)))
    for i, b in enumerate(ids):
        out[i] = replicate_generator(seed, int(b), stream="synthetic").gumbel(size=out.shape[1:])
    return out


def _corrupt_draws(n_tasks: int, n_instances: int, n_systems: int, seed: int, ids: np.ndarray, *,
                   noise: bool) -> tuple[np.ndarray, np.ndarray | None]:
    order = np.empty((ids.size, n_tasks), dtype=np.int64)
    values = np.empty((ids.size, n_tasks, n_instances, n_systems)) if noise else None
    for i, b in enumerate(ids):
        rng = replicate_generator(seed, int(b), stream="corrupt")
        order[i] = rng.permutation(n_tasks)
        if values is not None:
            values[i] = rng.gumbel(size=(n_tasks, n_instances, n_systems))
    return order, values


def corrupted_tasks(
    n_tasks: int, n_corrupted: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray
) -> np.ndarray:
    """Which tasks are corrupted: ``(B, T)`` bool, the first ``n_corrupted`` tasks of a random permutation.

    The permutation of replicate ``b`` comes from stream ``"corrupt"``; the sets
    are nested in ``n_corrupted``.
    """
    n_tasks, n_corrupted = int(n_tasks), int(n_corrupted)
    if not 0 <= n_corrupted <= n_tasks:
        raise VotebenchError(f"n_corrupted must be between 0 and the number of tasks ({n_tasks}), got {n_corrupted}")
    order, _ = _corrupt_draws(n_tasks, 1, 1, seed, replicate_ids(replicates), noise=False)
    return first_tasks_mask(order, n_corrupted)


def first_tasks_mask(order: np.ndarray, k: int) -> np.ndarray:
    """``(B, T)`` mask of the first ``k`` tasks of each row of a task permutation ``order`` ``(B, T)``."""
    mask = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(mask, order[:, :k], True, axis=1)
    return mask


def corrupted_noise(
    n_systems: int, n_tasks: int, n_instances: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Task permutation ``(B, T)`` and standard Gumbel noise ``(B, T, K, S)`` of the corrupted scores (stream ``"corrupt"``)."""
    _check_sizes(n_systems, n_tasks, n_instances)
    order, values = _corrupt_draws(int(n_tasks), int(n_instances), int(n_systems), seed, replicate_ids(replicates), noise=True)
    assert values is not None  # drawn with noise=True
    return order, values


def generate_array(
    n_systems: int,
    n_tasks: int,
    n_instances: int,
    *,
    phi: float,
    seed: int,
    replicates: int | Sequence[int] | np.ndarray = 1,
    scale: float = 1.0,
    n_corrupted: int = 0,
    corrupt_location: float = 1.0,
    rescale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Batched synthetic scores (system axis last) and the ground truth.

    Parameters
    ----------
    n_systems, n_tasks, n_instances : int
        ``N``, ``T`` and ``K`` (the paper uses 20, 20, 20).
    phi : float
        Location step ``phi >= 0``: system ``n`` is centred at ``phi * n``
        (0: no signal; larger: less noise).
    seed : int
        Base seed of the random streams.
    replicates : int or sequence of int
        Number of replicates, or the replicate indices to draw.
    scale : float
        Gumbel scale ``beta`` (paper: 1) of every score, corrupted or not.
    n_corrupted : int
        Number of corrupted tasks (section 4.2), drawn as the first tasks of a
        random permutation per replicate.
    corrupt_location : float
        Corrupted scores are centred at ``-corrupt_location * n`` (paper: ``-n``).
    rescale : float
        Factor ``x > 0`` multiplying the corrupted tasks' scores (section 4.3).

    Returns
    -------
    scores : ndarray, shape (B, T, K, S)
        ``phi * n + beta * G`` for clean tasks and ``rescale * (-corrupt_location * n + beta * G')``
        for corrupted ones (``G``, ``G'`` standard Gumbel).
    truth : ndarray, shape (S,)
        Ground-truth scores ``1, ..., N`` (higher is better).
    """
    phi = _check_phi(phi)
    if not (np.isfinite(scale) and scale > 0):
        raise VotebenchError(f"scale must be > 0, got {scale}")
    if not (np.isfinite(rescale) and rescale > 0):
        raise VotebenchError(f"rescale must be a factor > 0, got {rescale}")
    if not 0 <= int(n_corrupted) <= int(n_tasks):
        raise VotebenchError(f"n_corrupted must be between 0 and the number of tasks ({n_tasks}), got {n_corrupted}")
    truth = ground_truth(n_systems)
    scores = gumbel_noise(n_systems, n_tasks, n_instances, seed=seed, replicates=replicates)
    scores *= float(scale)
    scores += phi * truth
    if int(n_corrupted) > 0:
        order, noise = corrupted_noise(n_systems, n_tasks, n_instances, seed=seed, replicates=replicates)
        bad = (float(scale) * noise - float(corrupt_location) * truth) * float(rescale)
        mask = first_tasks_mask(order, int(n_corrupted))
        scores = np.where(mask[:, :, None, None], bad, scores)
    return scores, truth


def generate(
    n_systems: int,
    n_tasks: int,
    n_instances: int,
    *,
    phi: float,
    seed: int,
    replicate: int = 0,
    scale: float = 1.0,
    n_corrupted: int = 0,
    corrupt_location: float = 1.0,
    rescale: float = 1.0,
) -> xr.Dataset:
    """One synthetic benchmark of Colombo et al. (2022), section 4.1, as a Dataset.

    Parameters are those of :func:`generate_array` (``replicate``: which
    replicate of the random streams to draw).

    Returns
    -------
    xarray.Dataset
        ``scores`` (system, task, instance): a canonical score tensor (all
        tasks higher-is-better); ``truth`` (system): ground-truth scores
        ``1..N`` (higher is better, system ``s<N>`` is best); ``location``
        (system): the Gumbel locations ``phi * n``; ``corrupted`` (task): whether
        the task was corrupted.  ``attrs`` record the parameters.

    Examples
    --------
    >>> ds = generate(4, 3, 2, phi=1.0, seed=0)
    >>> dict(ds["scores"].sizes)
    {'system': 4, 'task': 3, 'instance': 2}
    >>> ds["truth"].values.tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    values, truth = generate_array(
        n_systems, n_tasks, n_instances, phi=phi, seed=seed, replicates=[int(replicate)], scale=scale,
        n_corrupted=n_corrupted, corrupt_location=corrupt_location, rescale=rescale,
    )
    systems = system_labels(n_systems)
    tasks = [f"t{t:0{len(str(int(n_tasks)))}d}" for t in range(int(n_tasks))]
    attrs = {
        "source": "synthetic (Colombo et al. 2022, section 4.1)",
        "phi": float(phi),
        "seed": int(seed),
        REPLICATE: int(replicate),
        "scale": float(scale),
        "n_corrupted": int(n_corrupted),
        "corrupt_location": float(corrupt_location),
        "rescale": float(rescale),
    }
    scores = scores_from_array(values[0], systems=systems, tasks=tasks, layout="system-last", attrs=attrs)
    mask = corrupted_tasks(n_tasks, n_corrupted, seed=seed, replicates=[int(replicate)])[0]
    ds = xr.Dataset(
        {
            "scores": scores,
            "truth": xr.DataArray(truth, dims=SYSTEM),
            "location": xr.DataArray(float(phi) * truth, dims=SYSTEM),
            "corrupted": xr.DataArray(mask, dims=TASK),
        }
    )
    ds.attrs = attrs
    return ds
