"""Rankings and bootstraps of battle files (``model_a, model_b, winner`` records).

The engine layer over :mod:`engine.kernels.battles` for the ``battles`` input kind
(:mod:`engine.io.readers.battles`): it reads a file into per-pair counts, applies a rule on battles and
returns the same :class:`xarray.Dataset` shapes as :func:`engine.rank` and :func:`engine.bootstrap`
(``score``, ``rank``; ``replicate_score``, ``replicate_rank``), so the command line renders them as any
other ranking, plus what only battles have: Arena's rank upper bound and ``P(i beats j)``.

Rules on battles
----------------
* ``bradley_terry``: maximum likelihood on the counts (options ``tie_model`` = ``half`` (default: a tie
  is half a win) or ``davidson``; ``scale`` = ``logit`` (default: natural log-odds centred at 0) or
  ``elo`` (Arena scale ``1000 + 400 log10 odds``)).
* ``win_rate``: the share of its battles a model won, ties counting half.
* ``elo``: online Elo over the records **in file order** (option ``k``, default 4 as FastChat; scale 400,
  base 10, initial 1000); the result depends on the order, which the header says.  Elo has no bootstrap
  here (resampled counts have no order).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import OPPONENT, REPLICATE, SYSTEM
from engine.errors import VotebenchError
from engine.io.readers.battles import CHUNK_ROWS, BattleInput, iter_battle_chunks, open_battles
from engine.io.readers.registry import input_kind
from engine.kernels import battles as BA
from engine.kernels.exact import snap_ties
from engine.kernels.ranking import min_rank

__all__ = ["BATTLE_RULES", "BOOTSTRAP_RULES", "battle_elo", "battle_request", "bootstrap_battles", "check_battle_rule",
           "input_kind", "rank_battles"]

#: rules that apply to battles, and the options each takes
BATTLE_RULES: dict[str, tuple[str, ...]] = {"bradley_terry": ("tie_model", "scale"), "elo": ("k",), "win_rate": ()}
#: rules with a bootstrap over battles (Elo is order-dependent: resampled counts have no order)
BOOTSTRAP_RULES = ("bradley_terry", "win_rate")
_ELO_ORDER = "online, in file order: another order of the same battles gives other ratings"


def check_battle_rule(rule: str, options: Mapping[str, Any] | None = None, *, source: str = "battles") -> dict[str, Any]:
    """The options of ``rule`` on battles, checked; else :class:`VotebenchError` naming what applies.

    Parameters
    ----------
    rule : str
        One of :data:`BATTLE_RULES`.
    options : mapping, optional
        ``tie_model``, ``scale`` (Bradley-Terry), ``k`` (Elo).
    source : str
        Named in messages.
    """
    from engine.rules import get_rule

    name = get_rule(rule).name
    if name not in BATTLE_RULES:
        raise VotebenchError(f"{source}: rule {name!r} needs a score tensor; rules on battles: {', '.join(BATTLE_RULES)}")
    opts = dict(options or {})
    bad = [k for k in opts if k not in BATTLE_RULES[name]]
    if bad:
        takes = ", ".join(BATTLE_RULES[name]) or "no option"
        raise VotebenchError(f"{source}: rule {name!r} on battles takes {takes}, not {bad[0]!r}")
    if "tie_model" in opts and opts["tie_model"] not in ("half", "davidson"):
        raise VotebenchError(f"{source}: tie_model must be 'half' or 'davidson', got {opts['tie_model']!r}")
    if "scale" in opts and opts["scale"] not in ("logit", "elo"):
        raise VotebenchError(f"{source}: scale must be 'logit' or 'elo', got {opts['scale']!r}")
    if "k" in opts:
        k = opts["k"]
        if isinstance(k, bool) or not isinstance(k, int | float) or not (np.isfinite(k) and k > 0):
            raise VotebenchError(f"{source}: k must be a positive number, got {k!r}")
        opts["k"] = float(k)
    return {"rule": name, **opts}


def battle_request(opts: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``rule`` and ``options`` of an :func:`engine.rank`-style request, for a battles file.

    The options of score tensors (``level``, ``weights``, ``groups``, ``within``, ``across``, a
    ``missing`` policy other than the default) do not apply to battles and are refused, one line
    naming them.
    """
    given = [k for k in ("level", "weights", "within", "across") if opts.get(k) is not None]
    given += ["groups"] if opts.get("groups") else []
    given += ["missing"] if opts.get("missing") not in (None, "error") else []
    if given:
        raise VotebenchError(f"{source}: {', '.join(given)} apply to score tensors, not to battles (a pair without battles "
                             "simply has none)")
    check_battle_rule(opts["rule"], opts.get("options"), source=source)
    return {"rule": opts["rule"], "options": dict(opts.get("options") or {})}


def _as_input(data: BattleInput | str | os.PathLike[str]) -> BattleInput:
    return data if isinstance(data, BattleInput) else open_battles(data)


def battle_elo(path: str | os.PathLike[str], *, k: float = 4.0, chunk_rows: int = CHUNK_ROWS) -> tuple[tuple[str, ...], np.ndarray]:
    """Online Elo over the records of a battles file in file order, read in chunks (bounded memory).

    Parameters
    ----------
    path : path-like
    k : float
        K-factor (FastChat's default 4); scale 400, base 10, initial 1000.
    chunk_rows : int
        Records per chunk; the ratings do not depend on it.

    Returns
    -------
    models : tuple of str
        Canonical (label) order.
    ratings : ndarray, shape (S,)
        :func:`engine.kernels.battles.elo` of all the records, in file order.
    """
    from engine.kernels.ranking import label_order

    R = np.zeros(0)
    models: list[str] = []
    for models, a, b, o in iter_battle_chunks(path, chunk_rows=chunk_rows):
        if len(models) > R.size:
            R = np.concatenate([R, np.full(len(models) - R.size, BA.ELO_INITIAL)])
        R = BA.elo(a, b, o, n_models=len(models), k=k, initial=R)
    order = label_order(models) if models else np.zeros(0, dtype=np.intp)
    return tuple(models[i] for i in order), R[order]


def rank_battles(data: BattleInput | str | os.PathLike[str], *, rule: str = "bradley_terry",
                 options: Mapping[str, Any] | None = None) -> xr.Dataset:
    """Rank the models of a battles file with a rule on battles.

    Parameters
    ----------
    data : BattleInput or path-like
        A battles file (read with :func:`engine.io.readers.open_battles`) or its counts.
    rule : {"bradley_terry", "elo", "win_rate"}
    options : mapping, optional
        ``tie_model`` (``half`` | ``davidson``) and ``scale`` (``logit`` | ``elo``) for Bradley-Terry;
        ``k`` for Elo.

    Returns
    -------
    xarray.Dataset
        ``score`` and ``rank`` (system) as :func:`engine.rank` returns them (competition ranks, higher
        score first); attrs ``rule``, ``level`` (``"battles"``), ``n_battles``, ``header`` (what the rule
        assumed: tie model, scale, K and order for Elo; shown with the ranking) and ``notes`` (e.g. the
        ridge of a Bradley-Terry fit whose maximum-likelihood estimate does not exist).

    Examples
    --------
    >>> import engine
    >>> ds = engine.rank_battles("data/battles_tac08.csv.gz", rule="win_rate")  # doctest: +SKIP
    """
    opts = check_battle_rule(rule, options, source=str(getattr(data, "source", data)))
    name = opts.pop("rule")
    header: dict[str, Any] = {}
    notes: list[str] = []
    if name == "elo":
        if isinstance(data, BattleInput):
            raise VotebenchError("elo needs the battle records in file order: give the path of the battles file")
        k = opts.get("k", 4.0)
        models, score = battle_elo(data, k=k)
        n = None
        header = {"k": k, "order": _ELO_ORDER}
    else:
        inp = _as_input(data)
        models, n = inp.models, inp.n_records
        c = inp.counts
        if name == "bradley_terry":
            tie_model, scale = opts.get("tie_model", "half"), opts.get("scale", "logit")
            fit = BA.fit_bradley_terry(c.wins, c.ties, tie_model=tie_model)
            score = BA.to_elo_scale(fit.strength) if scale == "elo" else fit.strength
            header = {"tie_model": tie_model, "scale": scale}
            if tie_model == "davidson":
                header["tie_param"] = float(fit.tie_param)
            if float(fit.ridge) > 0:
                notes.append(f"the maximum-likelihood fit does not exist (some model never lost, or groups of models never "
                             f"met): a ridge {float(fit.ridge):.3g} keeps the strengths finite")
        else:
            score = BA.win_rate(c.wins, c.ties)
        score = snap_ties(score, 1.0)
    rank = min_rank(score)
    ds = xr.Dataset({"score": (SYSTEM, np.asarray(score, dtype=np.float64)), "rank": (SYSTEM, rank)},
                    coords={SYSTEM: list(models)})
    ds.attrs = {"rule": name, "level": "battles", "header": header, "notes": notes}
    if n is not None:
        ds.attrs["n_battles"] = n
    return ds


def bootstrap_battles(data: BattleInput | str | os.PathLike[str], *, rule: str = "bradley_terry", replicates: int = 100,
                      seed: int = 0, options: Mapping[str, Any] | None = None, level: float = 0.95) -> xr.Dataset:
    """Bootstrap over battles: multinomial resampling of the pair counts, one fit per replicate.

    Parameters
    ----------
    data : BattleInput or path-like
    rule : {"bradley_terry", "win_rate"}
    replicates, seed : int
        Replicate ``b`` depends on ``seed`` and ``b`` only (``SeedSequence(seed, spawn_key=(battles, b))``).
    options : mapping, optional
        ``tie_model``, ``scale`` (Bradley-Terry).
    level : float
        Coverage of the score intervals behind ``rank_ub``.

    Returns
    -------
    xarray.Dataset
        As :func:`engine.bootstrap`: ``score``, ``rank`` (system), ``replicate_score``, ``replicate_rank``
        (replicate, system), so :func:`engine.summarize` gives the rank intervals; plus ``score_low``,
        ``score_high`` (percentile interval of the replicate scores), ``rank_ub`` (Arena's rank upper
        bound: 1 + the models whose ``score_low`` is above this model's ``score_high``) and, for
        Bradley-Terry, ``win_prob`` (system, opponent): the full-data model's probability that the system
        beats the opponent in one battle.  attrs: rule, over (``"battles"``), replicates, seed, level,
        method, header.

    Examples
    --------
    >>> import engine, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "battles.csv"
    >>> _ = path.write_text("model_a,model_b,winner\\nx,y,model_a\\nx,z,model_a\\ny,z,model_b\\nx,y,tie\\n")
    >>> ds = engine.bootstrap_battles(path, replicates=20, seed=0)
    >>> ds["rank"].values.tolist(), ds.attrs["over"], ds.sizes["replicate"]
    ([1.0, 3.0, 2.0], 'battles', 20)
    """
    inp = _as_input(data)
    opts = check_battle_rule(rule, options, source=inp.source)
    name = opts.pop("rule")
    if name not in BOOTSTRAP_RULES:
        raise VotebenchError(f"{inp.source}: rule {name!r} has no bootstrap over battles (online Elo depends on the order "
                             f"of the battles, resampled counts have none); use {' or '.join(BOOTSTRAP_RULES)}")
    tie_model, scale = opts.get("tie_model", "half"), opts.get("scale", "logit")
    try:
        bb = BA.bootstrap_battles(inp.counts, rule=name, replicates=int(replicates), seed=int(seed), tie_model=tie_model,
                                  scale=scale, level=level)
    except ValueError as exc:
        raise VotebenchError(f"{inp.source}: {exc}") from None
    models = list(inp.models)
    data_vars: dict[str, Any] = {
        "score": (SYSTEM, bb.score), "rank": (SYSTEM, bb.rank),
        "replicate_score": ((REPLICATE, SYSTEM), bb.replicate_score),
        "replicate_rank": ((REPLICATE, SYSTEM), bb.replicate_rank),
        "score_low": (SYSTEM, bb.score_low), "score_high": (SYSTEM, bb.score_high), "rank_ub": (SYSTEM, bb.rank_ub),
    }
    if bb.win_prob is not None:
        data_vars["win_prob"] = ((SYSTEM, OPPONENT), bb.win_prob)
    ds = xr.Dataset(data_vars, coords={SYSTEM: models, OPPONENT: models, REPLICATE: np.arange(bb.replicates)})
    header = {"tie_model": tie_model, "scale": scale} if name == "bradley_terry" else {}
    ds.attrs = {"rule": name, "over": "battles", "replicates": bb.replicates, "seed": bb.seed, "level": "battles",
                "score_interval": level, "n_battles": inp.n_records, "header": header,
                "method": "multinomial draws of the pair counts", "ridge_replicates": int((bb.ridge[1:] > 0).sum())}
    return ds
