"""The registry of aggregation rules.

A rule is data: an across-task kernel (task-level scores ``(..., T, S)`` to one
score per system ``(..., S)``) plus, when the rule can reduce the instances of
a task in one pass over chunked data, the name of its *within-task statistic*.
Adding a rule is one kernel plus one :func:`register_rule` call; the Python
API, the CLI's choices and the generic tests read this registry.

Levels (Colombo et al. 2022, section 3.3) for instance-level data:

``task``
    per task, mean over instances; then the rule across tasks (sigma*).
``two``
    per task, the rule's within-task statistic over instances; then the rule
    across tasks (sigma_2l for Borda).
``one``
    the rule's within-task statistic pooled over every (task, instance) judge
    (sigma_l for Borda).

For task-level data (one instance per task) the three levels coincide.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from engine.dims import LEVELS, Level
from engine.errors import VotebenchError
from engine.kernels import aggregate as K
from engine.kernels.exact import snap_ties
from engine.kernels.ranking import borda_points

__all__ = [
    "LazyFunction",
    "Names",
    "PLUGIN_GROUPS",
    "load_plugins",
    "load_rule_plugins",
    "register_plugins",
    "rule_choices",
    "Within",
    "Rule",
    "WITHIN",
    "RULES",
    "LEVELS",
    "register_within",
    "register_rule",
    "get_rule",
    "get_within",
    "rule_names",
]



class LazyFunction:
    """A function named by its module and name, imported when first called.

    The built-in rules name their kernels this way and the built-in readers their openers, so a
    command imports only the rule families and readers it runs (a Borda bootstrap of a CSV does not
    import the MCDM, Kemeny or battle kernels, nor the HELM reader).  It calls, pickles (by name, for
    the workers) and reports its signature as the function it names.

    Examples
    --------
    >>> ref = LazyFunction("engine.kernels.social", "copeland_across")
    >>> ref
    LazyFunction('engine.kernels.social', 'copeland_across')
    >>> ref.resolve().__name__
    'copeland_across'
    """

    __slots__ = ("module", "name", "_function")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._function: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The function named (its module imported on first use)."""
        if self._function is None:
            self._function = getattr(importlib.import_module(self.module), self.name)
        return self._function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.resolve())

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return LazyFunction, (self.module, self.name)

    def __repr__(self) -> str:
        return f"LazyFunction({self.module!r}, {self.name!r})"


def _family(module: str) -> Callable[[str], LazyFunction]:
    """``ref(name)``: a :class:`LazyFunction` naming ``name`` in the kernel module ``engine.kernels.<module>``."""
    return partial(LazyFunction, f"engine.kernels.{module}")


V, B, KE, M, BA = (_family(m) for m in ("social", "baselines", "kemeny", "mcdm", "battles"))


@dataclass(frozen=True)
class Within:
    """A decomposable within-task statistic.

    The statistic of a task is computed from per-judge values summed over the
    task's instances, so any chunking of the instance axis gives the same result
    (a tree reduction of ``sums`` and ``counts``), and a bootstrap over
    instances is a product of the judge values with resample counts.

    Attributes
    ----------
    name : str
    judge : callable
        ``(..., S) -> (..., S)``: value of every system on every judge
        (``NaN`` where the system is missing).
    task : callable
        ``(sums, counts) -> (..., T, S)``: task-level scores from the sums and
        counts of judge values over instances.
    pool : callable
        ``(sums, counts) -> (..., S)``: the statistic over every judge of every
        task at once (the ``one`` level).
    grid : int, optional
        When every judge value is an integer multiple of ``1 / grid`` (Borda
        points: halves, ``grid=2``), sums of judge values times integer counts
        are integers after scaling, computed exactly in float32 while they stay
        below 2**24 (the instance bootstrap uses this).
    separable : bool
        A system's task-level value depends on its own scores only (the mean):
        a candidate resample keeps the full-data task-level matrix.
    pairwise : bool
        Every judge value is a row sum of the judge's pairwise matrix
        (wins + ties / 2: Borda points), so the values among resampled candidates
        are rows of the per-task pairwise sums times the candidate counts.
    """

    name: str
    judge: Callable[[np.ndarray], np.ndarray]
    task: Callable[[np.ndarray, np.ndarray], np.ndarray]
    pool: Callable[[np.ndarray, np.ndarray], np.ndarray]
    grid: int | None = None
    separable: bool = False
    pairwise: bool = False


@dataclass(frozen=True)
class Rule:
    """An aggregation rule.

    Attributes
    ----------
    name : str
        Registry key, used by the API (``rule=``) and the CLI (``--rule``).
    kernel : callable
        ``kernel(X, *, weights=None, **options) -> (..., S)`` on oriented
        task-level scores ``X`` of shape ``(..., T, S)``; higher result is better.
    summary : str
        One line for ``--help`` and documentation.
    within : str or None
        Name of the decomposable :class:`Within` statistic used at levels
        ``two`` and ``one``; ``None``: the kernel itself runs on whole tasks.
    ties : str
        How the rule treats tied scores.
    missing : str
        ``"policy"``: missing scores need an explicit policy;
        ``"pairwise"``: the kernel itself ignores missing pairs.
    references : tuple of str
        Where the rule is defined.
    resample : {"index", "weights", "loop"}
        How a task (judge) bootstrap evaluates the kernel on a block of
        replicates: ``"weights"``: integer task weights act exactly as task
        multiplicities, so the replicates are one call with the resample counts
        as a ``(B, T)`` weight stack (pairwise rules then compare once and take
        matrix products); ``"index"``: one batched call on the resampled
        profiles ``(B, T, S)``; ``"loop"``: one call per replicate (kernels whose
        batch elements are not independent of their position, e.g. seeded draws).
    separable : bool
        A system's score depends on its own scores only, not on which other
        systems compete (mean, median, geometric mean, optimality gap): a candidate resample
        then reuses the full-data scores of the drawn systems.
    from_candidates : callable, optional
        ``(wins, pairs, counts) -> (B, S)``: the task-level scores among resampled
        candidates drawn ``counts`` times, linear in the counts, from the full-data
        pairwise sums (Borda, Average Rank); a candidate bootstrap is then one
        matrix product per block (whole-number weights only).
    absent_neutral : bool
        A system without any score (an all-``NaN`` column) changes nothing for the others: the kernel's
        scores of the present systems are those it gives without that column (pairwise rules ignore
        missing pairs; Borda, plurality, ... count only what is present).  Batch elements that differ only
        in their absent systems then share one kernel call (:func:`engine.labelled.core.call_kernel`);
        tested for every rule that declares it.
    tie_scale : {"score", "input", "unit"}
        The magnitude of each score's terms for the tie rule
        (:func:`engine.kernels.exact.snap_ties`): ``"score"``, the score's own ``|score|``
        (sums of non-negative terms, counts); ``"input"``, also the system's largest ``|score|``
        in the task-level input (a mean of scores of mixed sign can be much smaller than its
        terms); ``"unit"``, at least 1 (terms normalised to [-1, 1]: PROMETHEE flows, TOPSIS,
        VIKOR, pairwise shares).
    examples : tuple of mappings
        The option sets the generic tests exercise the rule with (invariance under permutations, chunks and
        blocks; differential tests against other libraries use the first); default ``({},)``, the rule's own
        defaults.  A rule with a required option (``scoring``'s ``vector``) gives one that sets it.

    Examples
    --------
    >>> import engine, numpy as np
    >>> rule = engine.get_rule("borda")
    >>> rule.kernel(np.array([[3.0, 1.0, 2.0], [1.0, 2.0, 3.0]])).tolist()  # (task, system) -> one score per system
    [2.0, 1.0, 3.0]
    """

    name: str
    kernel: Callable[..., np.ndarray]
    summary: str
    within: str | None = None
    ties: str = ""
    missing: str = "policy"
    references: tuple[str, ...] = field(default_factory=tuple)
    resample: str = "index"
    from_sums: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None
    sums: tuple[str, ...] = ()
    separable: bool = False
    from_candidates: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    tie_scale: str = "score"
    absent_neutral: bool = False
    examples: tuple[Mapping[str, Any], ...] = field(default_factory=lambda: ({},), compare=False)  # not hashed: dicts

    def magnitude(self, X: np.ndarray) -> np.ndarray | float | None:
        """Magnitude of the terms of this rule on task-level scores ``X`` (..., T, S) for the tie rule."""
        if self.tie_scale == "unit":
            return 1.0
        if self.tie_scale == "input":  # each system's largest |score| over the tasks: (..., S)
            X = np.asarray(X, dtype=np.float64)
            if X.ndim < 2:
                return None
            return np.where(np.isfinite(X), np.abs(X), 0.0).max(axis=-2, initial=0.0)
        return None

    def snap(self, score: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        """The tie rule applied to this rule's scores (``X``: its task-level input, for the magnitude)."""
        if self.tie_scale == "unit":
            return snap_ties(score, 1.0)
        return snap_ties(score, None if X is None else self.magnitude(X))

    @property
    def levels(self) -> tuple[Level, ...]:
        """Levels at which the rule can aggregate instance-level data (all of them)."""
        return LEVELS

    @property
    def one_pass(self) -> bool:
        """True when the within-task step is a tree reduction over chunked instances.

        Other rules evaluate their kernel on whole tasks (the instance axis in
        one chunk) at level ``two`` and on all judges at once at level ``one``.
        """
        return self.within is not None


WITHIN: dict[str, Within] = {}
RULES: dict[str, Rule] = {}


def register_within(stat: Within) -> Within:
    """Add a within-task statistic to the registry and return it."""
    WITHIN[stat.name] = stat
    return stat


def register_rule(rule: Rule) -> Rule:
    """Add a rule to the registry and return it.

    Parameters
    ----------
    rule : Rule
        The rule's record: its name, kernel and how it resamples, ties and treats missing scores.

    Returns
    -------
    Rule
        ``rule``; from then on the API (``rule=``), the CLI (``--rule``), sweeps and the generic tests accept it.

    Raises
    ------
    ValueError
        If the name is taken or the rule names an unknown within statistic.

    Examples
    --------
    >>> import engine
    >>> engine.register_rule(engine.get_rule("borda"))
    Traceback (most recent call last):
    ...
    ValueError: rule 'borda' is already registered
    """
    if rule.name in RULES:
        raise ValueError(f"rule {rule.name!r} is already registered")
    if rule.tie_scale not in ("score", "input", "unit"):
        raise ValueError(f"rule {rule.name!r}: tie_scale must be 'score', 'input' or 'unit', got {rule.tie_scale!r}")
    if rule.resample not in ("index", "weights", "loop"):
        raise ValueError(f"rule {rule.name!r}: resample must be 'index', 'weights' or 'loop', got {rule.resample!r}")
    if rule.within is not None and rule.within not in WITHIN:
        raise ValueError(f"rule {rule.name!r} names unknown within statistic {rule.within!r}")
    RULES[rule.name] = rule
    return rule


def rule_names() -> list[str]:
    """Names of all registered rules, sorted.

    Returns
    -------
    list of str
        What ``rule=`` and ``--rule`` accept.

    Examples
    --------
    >>> import engine
    >>> names = engine.rule_names()
    >>> names == sorted(names) and {"borda", "copeland", "promethee2"} <= set(names)
    True
    """
    return sorted(RULES)


def get_rule(name: str) -> Rule:
    """Look a rule up by name; an unknown name raises a :class:`VotebenchError` listing the known ones.

    Parameters
    ----------
    name : str
        A registered rule (:func:`rule_names`).

    Returns
    -------
    Rule
        Its registry record.

    Examples
    --------
    >>> import engine
    >>> engine.get_rule("copeland").summary
    'majority wins minus majority losses, u = |L| - |U|'
    """
    if name not in RULES and isinstance(name, str):
        load_rule_plugins()  # a rule an installed package adds (entry points), looked for only when asked
    try:
        return RULES[name]
    except KeyError:
        raise VotebenchError(f"unknown rule {name!r}; known rules: {', '.join(rule_names())}") from None


#: entry-point groups (``pyproject.toml`` of another package: ``[project.entry-points."votebench.rules"]``,
#: ``my_rule = "my_package.rules:MY_RULE"``): each entry names one record, a :class:`Rule`, an input reader
#: (:class:`engine.io.readers.Reader`) or a perturbation kind (:class:`engine.sweep.kinds.Kind`)
PLUGIN_GROUPS = ("votebench.rules", "votebench.readers", "votebench.kinds")
_LOADED: set[str] = set()
log = logging.getLogger("engine")


def load_plugins(group: str, kind: type | tuple[type, ...]) -> list[Any]:
    """The records that installed packages declare in the entry-point ``group``, each loaded once per process.

    Scanning the installed packages takes a noticeable fraction of a second, so the registries call this
    only when a name they do not know is asked for, or when they are listed in full (``votebench rules``,
    an unknown ``--rule``); a built-in name never pays for it.  An entry that fails to load, or names
    something other than a ``kind`` record, is reported as a note (logger ``engine``) and skipped.

    Parameters
    ----------
    group : str
        One of :data:`PLUGIN_GROUPS`.
    kind : type or tuple of types
        What the records must be.

    Returns
    -------
    list
        The records loaded by this call (empty when ``group`` was loaded before).
    """
    if group in _LOADED:
        return []
    _LOADED.add(group)
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=group):
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the engine: it is named and skipped
            log.warning("plugin %s = %s (%s) could not be loaded: %s", ep.name, ep.value, group, str(exc).splitlines()[0:1])
            continue
        if not isinstance(obj, kind):
            log.warning("plugin %s = %s (%s) is a %s, not a %s record; skipped", ep.name, ep.value, group,
                        type(obj).__name__, kind.__name__ if isinstance(kind, type) else kind[0].__name__)
            continue
        out.append(obj)
    return out


def register_plugins(group: str, kind: type, registry: Any, register: Callable[[Any], Any], what: str) -> list[Any]:
    """Register the records of the entry-point ``group`` with ``register`` (once); the ones registered.

    A record whose name ``registry`` holds already, or that ``register`` refuses, is skipped with a note.
    """
    added = []
    for record in load_plugins(group, kind):
        if record.name in registry:
            log.warning("plugin %s %r: a %s of that name is registered already; skipped", what, record.name, what)
            continue
        try:
            register(record)
        except (ValueError, VotebenchError) as exc:
            log.warning("plugin %s %r refused: %s", what, record.name, exc)
            continue
        added.append(record)
    return added


def load_rule_plugins() -> None:
    """Register the rules of the ``votebench.rules`` entry points (once; a name already taken is skipped with a note)."""
    register_plugins("votebench.rules", Rule, RULES, register_rule, "rule")


class Names(Sequence[str]):
    """The names of a registry as argparse ``choices``: a name not registered yet triggers ``load`` (the plugins) once,
    so a plugin's name is accepted while a built-in one costs no scan of the installed packages."""

    def __init__(self, names: Callable[[], Sequence[str]], load: Callable[[], object]) -> None:
        self.names, self.load = names, load

    def __contains__(self, name: object) -> bool:
        if name not in self.names():
            self.load()
        return name in self.names()

    def __iter__(self) -> Iterator[str]:  # the full list (help, an error message): with the plugins
        self.load()
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __getitem__(self, i: Any) -> Any:
        return self.names()[i]


def rule_choices() -> Names:
    """``--rule`` choices: every registered rule, and the plugins' once a name is not built in."""
    return Names(rule_names, load_rule_plugins)


def get_within(name: str) -> Within:
    """Look a within-task statistic up by name."""
    try:
        return WITHIN[name]
    except KeyError:
        raise VotebenchError(f"unknown within-task statistic {name!r}; known: {', '.join(sorted(WITHIN))}") from None


# --- within-task statistics -------------------------------------------------------------
register_within(Within("mean", judge=K.identity_values, task=K.mean_task, pool=K.mean_pool, separable=True))
register_within(Within("borda", judge=borda_points, task=K.sum_task, pool=K.sum_pool, grid=2, pairwise=True))

# --- rules --------------------------------------------------------------------------------
register_rule(
    Rule(
        "mean",
        K.mean_across,
        "arithmetic mean over tasks of the per-task mean over instances (sigma_mean)",
        within="mean",
        ties="systems with equal means share a rank",
        references=("Colombo et al. 2022, section 2.1",), resample="weights", separable=True, tie_scale="input",
        absent_neutral=True,
    )
)
register_rule(
    Rule(
        "borda",
        K.borda_across,
        "Borda count: points = systems beaten + 0.5 x systems tied, summed over judges",
        within="borda",
        ties="tied systems share the points of their positions (0.5 per tie), independent of input order",
        references=("Colombo et al. 2022, section 3.2-3.3", "Rofin et al. 2023, section 2.2"), resample="weights",
        from_candidates=K.borda_from_candidates, absent_neutral=True,
    )
)

# scoring rules decompose over judges: per-judge positional points, summed
register_within(
    Within("plurality", judge=partial(V("scoring_points"), vector=V("plurality_vector")), task=K.sum_task, pool=K.sum_pool)
)
register_within(Within("dowdall", judge=partial(V("scoring_points"), vector=V("dowdall_vector")), task=K.sum_task, pool=K.sum_pool))

_VNR = "Rofin et al. 2023 (Vote'n'Rank), section 2.2 and Appendix A.1"
_SHARED = "tied systems share the mean of the points of the positions they occupy"
_PAIRWISE = "a pair with equal scores counts for neither system; pairs with a missing score are ignored"

register_rule(Rule("plurality", V("plurality_across"), "tasks won: scoring vector (1, 0, ..., 0)", within="plurality",
                   ties="k systems tied for first get 1/k each", references=(_VNR,), resample="weights",
                   absent_neutral=True))
register_rule(Rule("dowdall", V("dowdall_across"), "scoring vector (1, 1/2, ..., 1/|M|)", within="dowdall",
                   ties=_SHARED, references=(_VNR,), resample="weights", absent_neutral=True))
register_rule(Rule("scoring", V("scoring_vector_across"), "generic positional rule with option vector=[c1, c2, ...]",
                   ties=_SHARED, references=(_VNR,), examples=({"vector": [5, 3, 2, 2, 1, 0, 0, 0]},)))
register_rule(Rule("threshold", V("threshold_across"),
                   "fewest last places, then fewest in the last two, ... (c = (1,..,1,0), then (1,..,1,0,0), ...)",
                   ties="positions shared equally; systems equal under every vector tie", references=(_VNR,)))
register_rule(Rule("baldwin", V("baldwin_across"), "iterative Borda elimination; score = elimination round",
                   ties="all systems with the minimum Borda score leave together and tie", references=(_VNR,), resample="weights",
                   from_sums=V("baldwin_from_sums"), sums=("wins", "pairs")))
register_rule(Rule("condorcet", V("condorcet_across"), "1 for the Condorcet winner, 0 for everyone else (all 0: no winner)",
                   ties=_PAIRWISE, missing="pairwise", references=(_VNR,),
                   resample="weights", from_sums=V("condorcet_from_sums"), sums=('wins', 'pairs')))
register_rule(Rule("copeland", V("copeland_across"), "majority wins minus majority losses, u = |L| - |U|",
                   ties=_PAIRWISE, missing="pairwise", references=(_VNR,),
                   resample="weights", from_sums=V("copeland_from_sums"), sums=('wins', 'pairs')))
register_rule(Rule("minimax", V("minimax_across"), "minus the largest majority defeat, -max_B s(B, m)",
                   ties=_PAIRWISE, missing="pairwise", references=(_VNR,),
                   resample="weights", from_sums=V("minimax_from_sums"), sums=('wins', 'pairs')))
register_rule(Rule("kemeny", KE("kemeny_across"),
                   "exact Kemeny consensus (minimum total Kendall distance) up to 12 systems, Borda count beyond",
                   ties="a tied pair costs 0.5 either way; systems that optimal orders rank both ways share their mean position",
                   references=("Colombo et al. 2022, sections 3.1-3.2",), resample="weights"))

_PAVAO = "Pavao, Vaccaro, Guyon 2021 (ESANN), section 2.1"
register_rule(Rule("geometric_mean", B("geometric_mean_across"), "weighted geometric mean over tasks (sigma_gm); scores > 0",
                   ties="equal means share a rank", references=("Rofin et al. 2023, section 3.1",), separable=True))
register_rule(Rule("median", B("median_across"), "median over tasks (Pavao's median judge); whole-number weights repeat tasks",
                   ties="equal medians share a rank", references=(_PAVAO,), separable=True,
                   resample="weights", tie_scale="input"))
register_rule(Rule("optimality_gap", B("optimality_gap_across"),
                   "minus the mean shortfall below gamma (option gamma, default 0.95; scores on a 0-1 scale)",
                   ties="equal gaps share a rank", references=("Rofin et al. 2023, section 3.1; Agarwal et al. 2021",),
                   separable=True, tie_scale="input", examples=({}, {"gamma": 0.7})))
register_rule(Rule("average_rank", B("average_rank_across"), "minus the mean per-task rank (ties get the average rank)",
                   ties="average ranks", references=(_PAVAO,), resample="weights",
                   from_candidates=B("average_rank_from_candidates")))
register_rule(Rule("success_rate", B("success_rate_across"), "mean share of tasks won against each opponent",
                   ties="a tie wins nothing; missing pairs ignored", missing="pairwise", references=(_PAVAO,),
                   resample="weights", from_sums=B("success_rate_from_sums"), sums=('wins', 'pairs'), tie_scale="unit"))
register_rule(Rule("relative_difference", B("relative_difference_across"),
                   "mean relative difference (u - v) / (u + v) against each opponent (scores >= 0)",
                   ties="both 0 counts 0; missing pairs ignored", missing="pairwise", references=(_PAVAO,),
                   resample="weights", from_sums=B("relative_difference_from_sums"), sums=('reldiff', 'pairs'),
                   tie_scale="unit"))
register_rule(Rule("pavao_copeland", B("pavao_copeland_across"),
                   "pairwise Copeland of Pavao: 1 / 0.5 / 0 per opponent by majority of tasks, averaged",
                   ties="a majority tie counts 0.5; missing pairs ignored", missing="pairwise", references=(_PAVAO,),
                   resample="weights", from_sums=B("pavao_copeland_from_sums"), sums=('wins', 'pairs')))
register_rule(Rule("random_judge", B("random_judge_across"), "the ranking of one task drawn at random (option seed)",
                   ties="those of the drawn task", references=(_PAVAO,), resample="loop", examples=({"seed": 3},)))

_XLLM = "Gjorgjevik et al. 2025 (xLLMBench), sections 3.2, 4.3-4.4, Appendix C"
register_rule(Rule("promethee2", M("promethee2_net"),
                   "PROMETHEE II net flow; options preference (usual|quasi|vshape|level|linear_indifference|gaussian, "
                   "or one per task), q, p, s, maximize",
                   ties="equal differences give no preference (usual function); equal net flows share a rank",
                   references=(_XLLM,), resample="weights", tie_scale="unit",
                   examples=({}, {"preference": "quasi", "q": 0.1}, {"preference": "level", "q": 0.1, "p": 0.4},
                             {"preference": "linear"}, {"preference": "linear_indifference"}, {"preference": "gaussian"})))
register_rule(Rule("topsis", M("topsis"), "TOPSIS relative closeness to the ideal (min-max normalisation)",
                   ties="equal closeness shares a rank", references=(_XLLM,), tie_scale="unit"))
register_rule(Rule("vikor", M("vikor_score"), "VIKOR compromise: -Q with v = 0.5 (option v)",
                   ties="equal Q shares a rank", references=(_XLLM,), tie_scale="unit"))

# --- pairwise battles and leaderboard win rates (engine/kernels/battles.py) ------------------

_ARENA = "Bradley & Terry 1952; Davidson 1970; Chiang et al. 2024 (Chatbot Arena), FastChat elo_analysis.py"
_BATTLES = "every task is a judge: one battle per pair of systems it scores (equal scores tie); missing pairs ignored"
register_rule(Rule("bradley_terry", BA("bradley_terry_across"),
                   "Bradley-Terry maximum likelihood on the battles of every task; options tie_model (half|davidson), "
                   "scale (logit: log-odds centred at 0 | elo: 1000 + 400 log10 odds)",
                   ties=_BATTLES + "; a tie is half a win (tie_model=half) or Davidson's tie", missing="pairwise",
                   references=(_ARENA,), resample="weights", tie_scale="unit",
                   examples=({}, {"tie_model": "davidson"}, {"scale": "elo"})))
register_rule(Rule("elo", BA("elo_across"),
                   "online Elo over the tasks in canonical (label) order, all pairs of a task at once; option k "
                   "(default 4); order-dependent",
                   ties=_BATTLES + "; a tie scores 0.5", missing="pairwise", references=(_ARENA,), resample="index",
                   tie_scale="unit", examples=({}, {"k": 16})))
register_rule(Rule("win_rate", BA("win_rate_across"),
                   "share of its battles over all tasks a system won, ties counting half",
                   ties=_BATTLES + "; a tie counts half", missing="pairwise", references=(_ARENA,),
                   resample="weights", tie_scale="unit"))
register_rule(Rule("mean_win_rate", BA("mean_win_rate_across"),
                   "HELM mean win rate: per task (worse + (ties - 1)/2)/(n - 1) over the systems present, averaged "
                   "over tasks (tasks with < 2 systems dropped)",
                   ties="a tie counts half; a system is averaged over the tasks that score it",
                   missing="pairwise", references=("Liang et al. 2023 (HELM), summarize.py compute_aggregate_row_win_rates",),
                   resample="weights", tie_scale="unit"))
register_rule(Rule("mteb_borda", BA("mteb_borda_across"),
                   "MTEB Borda count: sum over tasks of N - average rank among the systems present (missing = 0 points)",
                   ties="tied systems share the mean position (0.5 per tie); a missing score earns 0 and every "
                        "present system one point per absent one", missing="pairwise",
                   references=("MTEB leaderboard, mteb/leaderboard/table.py _borda_count (embeddings-benchmark/mteb)",),
                   resample="weights"))
