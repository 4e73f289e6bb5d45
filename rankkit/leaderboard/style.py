"""Style control for system leaderboards: ratings with the answers' length and formatting taken out.

Two corrections fitted on the battles' own answers: LMArena's style-controlled Bradley–Terry and
alpaca_eval's length-controlled win rate against an anchor. More in ``docs/bias-control.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankkit.data.tasks import StyleFeatures, Task
from rankkit.leaderboard.board import LeaderboardError, SystemRating, systems_of
from rankkit.leaderboard.rating import none_if_nan, rows_from_intervals
from rankkit.stats.intervals import Interval, bootstrap, logistic_regression
from rankkit.stats.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome

#: control name -> the style covariates it adds (each a :class:`~rankkit.data.tasks.StyleFeatures` count).
CONTROLS: dict[str, tuple[str, ...]] = {"length": ("tokens",), "format": ("headers", "list_items", "bold")}

#: How a covariate is labelled in tables and JSON.
COVARIATE_LABELS = {"tokens": "length", "headers": "headers", "list_items": "list_items", "bold": "bold"}


def parse_control(control: str | Sequence[str] | None) -> tuple[str, ...]:
    """The controls asked for, each once, in :data:`CONTROLS` order (None or empty: none).

    Raises
    ------
    LeaderboardError
        An unknown name.

    Examples
    --------
    >>> parse_control("format,length")
    ('length', 'format')
    >>> parse_control(None)
    ()
    """
    if not control:
        return ()
    names = [part.strip() for part in (control.split(",") if isinstance(control, str) else control) if part.strip()]
    unknown = [name for name in names if name not in CONTROLS]
    if unknown:
        raise LeaderboardError(f"unknown control {unknown[0]!r} (choose length, format or length,format)")
    return tuple(name for name in CONTROLS if name in names)


def covariate_names(control: Sequence[str]) -> list[str]:
    """The style covariates (feature names) a parsed control adds, in a fixed order."""
    return [feature for name in control for feature in CONTROLS[name]]


def normalised_difference(a: float, b: float) -> float:
    """LMArena's normalised style difference ``(a − b) / (a + b)``, in [-1, 1]; 0 when both are 0.

    Examples
    --------
    >>> normalised_difference(300, 100), normalised_difference(0, 0)
    (0.5, 0.0)
    """
    total = a + b
    return (a - b) / total if total else 0.0


def _features(task: Task, system: str, candidate_of: Mapping[str, str]) -> StyleFeatures:
    return task.candidate(candidate_of[system]).style


def battle_covariates(
    tasks: Mapping[str, Task], outcomes: Sequence[Outcome], task_ids: Sequence[str], features: Sequence[str]
) -> list[tuple[float, ...]]:
    """Each battle's :func:`normalised_difference` per feature, first system's answer minus the second's."""
    if len(task_ids) != len(outcomes):
        raise LeaderboardError(
            "style control needs the task of every match; this leaderboard's matches "
            "do not record theirs (rebuild it with rankkit 0.3)"
        )
    systems = {task_id: systems_of(task) for task_id, task in tasks.items()}
    rows = []
    for (a, b, _), task_id in zip(outcomes, task_ids):
        if task_id not in tasks:
            raise LeaderboardError(f"style control: the data have no task {task_id!r} (a match was played on it)")
        task = tasks[task_id]
        fa, fb = _features(task, a, systems[task_id]), _features(task, b, systems[task_id])
        rows.append(tuple(normalised_difference(getattr(fa, f), getattr(fb, f)) for f in features))
    return rows


# Style-controlled Bradley–Terry


@dataclass(frozen=True)
class Battle:
    """One match with what style control fits on: the outcome and its style covariates."""

    a: str
    b: str
    outcome: float
    covariates: tuple[float, ...]


def contextual_bradley_terry(
    battles: Sequence[Battle], systems: Sequence[str], features: Sequence[str], alpha: float = 0.01
) -> dict[str, float]:
    """Style-controlled Bradley–Terry: system ratings (Elo scale) and style coefficients, fitted jointly.

    ``P(a beats b) = σ(θ_a − θ_b + Σ_k γ_k · x_k)``, x_k the normalised style differences. Ratings are
    ``1000 + θ · 400 / ln 10`` (mean θ zero); each γ_k comes under ``style:LABEL`` as log-odds per
    unit of normalised difference. ``alpha`` is the L2 weight on every coefficient (keeps a system
    that never lost finite).
    """
    design, target = _style_design(battles, systems, len(features))
    return _fit_style_design(design, target, systems, features, alpha)


def _style_design(battles: Sequence[Battle], systems: Sequence[str], n_features: int) -> tuple[Any, Any]:
    """The contextual BT design (+1 for a, −1 for b, then the covariates) and the outcomes."""
    import numpy as np

    index = {name: i for i, name in enumerate(systems)}
    rows = np.arange(len(battles))
    design = np.zeros((len(battles), len(systems) + n_features))
    design[rows, [index[b.a] for b in battles]] += 1.0
    design[rows, [index[b.b] for b in battles]] -= 1.0
    if n_features:
        design[:, len(systems) :] = np.array([b.covariates for b in battles], dtype=float).reshape(
            len(battles), n_features
        )
    return design, np.array([b.outcome for b in battles], dtype=float)


def _fit_style_design(
    design: Any, target: Any, systems: Sequence[str], features: Sequence[str], alpha: float
) -> dict[str, float]:
    import numpy as np

    n_systems = len(systems)
    beta = logistic_regression(design, target, np.full(design.shape[1], max(alpha, 1e-6)))
    strengths = beta[:n_systems] - beta[:n_systems].mean()
    factor = ELO_SCALE / math.log(ELO_BASE)
    out = {name: float(ELO_INITIAL + factor * strengths[i]) for i, name in enumerate(systems)}
    for k, feature in enumerate(features):
        varies = bool(np.any(design[:, n_systems + k]))  # no answers differ in it: nothing to estimate
        out[f"style:{COVARIATE_LABELS[feature]}"] = float(beta[n_systems + k]) if varies else math.nan
    return out


def _coefficients(intervals: Mapping[str, Interval]) -> dict[str, dict[str, float | None]]:
    return {
        name.removeprefix("style:"): {
            "estimate": none_if_nan(interval.estimate),
            "ci_low": none_if_nan(interval.low),
            "ci_high": none_if_nan(interval.high),
        }
        for name, interval in intervals.items()
        if name.startswith("style:")
    }


def rate_style_bt(
    battles: Sequence[Battle],
    systems: Sequence[str],
    features: Sequence[str],
    resamples: int,
    seed: int,
    alpha: float = 0.01,
) -> tuple[list[SystemRating], dict[str, Any]]:
    """Style-controlled ratings, best first, with bootstrap intervals over battles (``resamples`` 0: none).

    Returns the rows and the coefficients ``{label: {"estimate", "ci_low", "ci_high"}}`` (log-odds
    per unit of normalised difference).
    """
    import numpy as np

    # The design is built once; each resample is a selection of its rows.
    design, target = _style_design(battles, systems, len(features))

    def fit(sample: Sequence[int]) -> dict[str, float]:
        rows = np.asarray(sample, dtype=int)
        return _fit_style_design(design[rows], target[rows], systems, features, alpha)

    intervals = bootstrap(fit, range(len(battles)), resamples=resamples, seed=seed)
    ratings = {name: intervals[name] for name in systems}
    return rows_from_intervals(ratings, [(b.a, b.b, b.outcome) for b in battles]), _coefficients(intervals)


# Length-controlled win rate (alpaca_eval)


#: L2 weight on the instruction-difficulty effects: they are many (one per task) and each rests on
#: the few systems that played the anchor on that task.
DIFFICULTY_PENALTY = 1.0


def length_controlled_win_rates(
    battles: Sequence[Battle], task_ids: Sequence[str], others: Sequence[str], alpha: float = 0.01
) -> dict[str, float]:
    """alpaca_eval's length-controlled win rate of each system against the anchor.

    ``P(m beats the anchor on t) = σ(θ_m + β · tanh(Δ / sd(Δ)) + δ_t)``, Δ the battle's only
    covariate (normalised length difference), δ_t the task's negated difficulty; the rate is
    ``mean_t σ(θ_m + δ_t)`` over the tasks played. Unlike alpaca_eval, β is shared by all systems
    (a per-system slope is mostly noise at these sizes). ``alpha`` weighs θ and β; δ_t take
    :data:`DIFFICULTY_PENALTY`. Returns system -> rate, then ``style:length`` -> β.
    """
    design, target, task_column = _lc_design(battles, task_ids, others)
    return _fit_lc_design(design, target, task_column, others, alpha)


def _lc_design(battles: Sequence[Battle], task_ids: Sequence[str], others: Sequence[str]) -> tuple[Any, Any, Any]:
    """The LC GLM's design, the outcomes and each battle's task column."""
    import numpy as np

    system_index = {name: i for i, name in enumerate(others)}
    tasks = list(dict.fromkeys(task_ids))
    task_index = {task_id: i for i, task_id in enumerate(tasks)}
    lengths = np.array([battle.covariates[0] for battle in battles], dtype=float)
    scale = float(np.std(lengths)) or 1.0
    n_systems = len(others)
    rows = np.arange(len(battles))
    design = np.zeros((len(battles), n_systems + 1 + len(tasks)))
    design[rows, [system_index[b.a] for b in battles]] = 1.0
    design[:, n_systems] = np.tanh(lengths / scale)
    task_column = np.array([n_systems + 1 + task_index[task_id] for task_id in task_ids], dtype=int)
    design[rows, task_column] = 1.0
    return design, np.array([b.outcome for b in battles], dtype=float), task_column


def _fit_lc_design(design: Any, target: Any, task_column: Any, others: Sequence[str], alpha: float) -> dict[str, float]:
    import numpy as np

    n_systems = len(others)
    n_tasks = design.shape[1] - n_systems - 1
    penalty = np.concatenate([np.full(n_systems + 1, max(alpha, 1e-6)), np.full(n_tasks, DIFFICULTY_PENALTY)])
    beta = logistic_regression(design, target, penalty)
    out = {}
    for i, name in enumerate(others):
        played = np.unique(task_column[design[:, i] == 1.0])  # the tasks this system played the anchor on
        out[name] = float(np.mean(1.0 / (1.0 + np.exp(-(beta[i] + beta[played]))))) if len(played) else math.nan
    out["style:length"] = float(beta[n_systems])
    return out


def rate_length_controlled(
    battles: Sequence[Battle], task_ids: Sequence[str], systems: Sequence[str], anchor: str, resamples: int, seed: int
) -> tuple[list[SystemRating], dict[str, Any]]:
    """Length-controlled win rates against ``anchor`` (at 0.5), best first, with bootstrap intervals over matches.

    Returns the rows and the length coefficient with its interval; ``resamples`` 0: no intervals.
    """
    import numpy as np

    others = [name for name in systems if name != anchor]
    # The design is built once (its length scale from all the matches); each resample is a selection of its rows.
    design, target, task_column = _lc_design(battles, task_ids, others)

    def fit(sample: Sequence[int]) -> dict[str, float]:
        rows = np.asarray(sample, dtype=int)
        return _fit_lc_design(design[rows], target[rows], task_column[rows], others, 0.01)

    intervals = bootstrap(fit, range(len(battles)), resamples=resamples, seed=seed)
    ratings = {name: intervals[name] for name in others}
    ratings[anchor] = Interval(0.5, 0.5, 0.5)
    return rows_from_intervals(ratings, [(b.a, b.b, b.outcome) for b in battles]), _coefficients(intervals)


def battles_of(
    tasks: Iterable[Task], outcomes: Sequence[Outcome], task_ids: Sequence[str], features: Sequence[str]
) -> list[Battle]:
    """One :class:`Battle` per match, in order, with its style covariates (:func:`battle_covariates`)."""
    by_id = {task.task_id: task for task in tasks}
    covariates = battle_covariates(by_id, outcomes, task_ids, features)
    return [Battle(a, b, outcome, row) for (a, b, outcome), row in zip(outcomes, covariates)]


# Self-preference


def _squashed(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def judge_model_name(judge: Mapping[str, Any]) -> str | None:
    """The judge's model name (``model=`` option, else the first positional value), or None for a simulated judge.

    Examples
    --------
    >>> judge_model_name({"spec": "openai:model=gpt-4o-2024-05-13,base_url=http://x"})
    'gpt-4o-2024-05-13'
    >>> judge_model_name({"spec": "sim:preset=gpt4", "simulated": True}) is None
    True
    """
    if judge.get("simulated"):
        return None
    spec = str(judge.get("spec") or "")
    _, _, options = spec.partition(":")
    for part in options.split(","):
        key, eq, value = part.partition("=")
        if eq and key.strip() == "model" and value.strip():
            return value.strip()
    for part in options.split(","):
        if part.strip() and "=" not in part:
            return part.strip()
    return None


def self_preference_systems(judge: Mapping[str, Any], systems: Iterable[str]) -> list[str]:
    """Systems that look like the judge's own model, whose ratings a self-preferring judge inflates.

    A name heuristic: letters and digits lower-cased, flagged when equal or one contains the other
    (``gpt4o`` matches ``gpt4o20240513``); other sizes of one family are not flagged. Empty
    without a model name of 3 characters or more.

    Examples
    --------
    >>> self_preference_systems({"spec": "openai:model=gpt-4o"}, ["gpt-4o-2024-05-13", "claude-3-opus"])
    ['gpt-4o-2024-05-13']
    """
    model = judge_model_name(judge)
    if not model:
        return []
    mine = _squashed(model.rsplit("/", 1)[-1])
    if len(mine) < 3:
        return []
    return [name for name in systems if (other := _squashed(name)) and (mine in other or other in mine)]


# The one entry point the leaderboards use


def controlled_ratings(
    tasks: Iterable[Task],
    outcomes: Sequence[Outcome],
    task_ids: Sequence[str],
    systems: Sequence[str],
    control: Sequence[str],
    scale: str = "elo",
    anchor: str | None = None,
    resamples: int = 200,
    seed: int = 0,
    alpha: float = 0.01,
) -> tuple[list[SystemRating], dict[str, Any]]:
    """A leaderboard's rows with a style control, and the style block its JSON stores.

    Parameters
    ----------
    control
        Parsed controls (:func:`parse_control`), not empty.
    scale
        ``elo``: style-controlled Bradley–Terry (:func:`rate_style_bt`); ``win_rate``: the
        length-controlled win rate against ``anchor`` (``length`` only).

    Returns
    -------
    tuple[list[SystemRating], dict[str, Any]]
        Rows ranked by the controlled rating, each with its ``unadjusted`` rating, and
        ``{"control", "model", "unit", "coefficients"}``.
    """
    from dataclasses import replace

    from rankkit.stats.ratings import bradley_terry, win_rates

    control = parse_control(control)
    if not control:
        raise LeaderboardError("controlled_ratings needs a control (length, format)")
    tasks = list(tasks)
    features = covariate_names(control)
    battles = battles_of(tasks, outcomes, task_ids, features)
    if scale == "win_rate":
        if control != ("length",):
            raise LeaderboardError(
                "an anchored (win-rate) leaderboard takes control=length only (the "
                "length-controlled win rate); use the arena leaderboard for format control"
            )
        if anchor is None:
            raise LeaderboardError("the length-controlled win rate needs the anchor system")
        rows, coefficients = rate_length_controlled(battles, task_ids, systems, anchor, resamples, seed)
        others = [name for name in systems if name != anchor]
        plain = {**win_rates(outcomes, others), anchor: 0.5}
        block = {
            "model": "length-controlled win rate (alpaca_eval GLM: system + tanh length term + "
            "instruction difficulty; length term shared by all systems)",
            "unit": "log-odds per unit of tanh(length difference / its sd)",
        }
    else:
        rows, coefficients = rate_style_bt(battles, systems, features, resamples, seed, alpha)
        plain = bradley_terry(outcomes, systems, alpha=alpha)
        block = {
            "model": "style-controlled Bradley-Terry (logistic regression on the systems and the "
            "answers' normalised style differences)",
            "unit": "log-odds per unit of normalised difference (a-b)/(a+b)",
        }
    rows = [replace(row, unadjusted=none_if_nan(plain.get(row.name))) for row in rows]
    return rows, {"control": list(control), **block, "coefficients": coefficients}
