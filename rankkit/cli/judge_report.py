"""``rankkit judge-report``: one judge measured, or several judges side by side on the same pairs.

Several judges: ``--judge`` repeated, or ``--recorded-judges`` over a ``replay:`` file holding several
judges and methods. They share the tasks, the pairs, the seed and one judgment cache.
"""

from __future__ import annotations

import click

from rankkit.cli.options import DataOptions, SeveralJudgesOptions, data_options, several_judges_options
from rankkit.cli.support import announce_judge, checked_judge_spec, guarded, judging, prepare_output, say
from rankkit.data.specs import SpecError, parse_spec

#: Characters a recorded label may not hold: it is written into a replay spec, where they would add options.
SPEC_SYNTAX = ",=:"


def parse_recorded_judges(value: str | None) -> tuple[str, ...] | None:
    """``--recorded-judges``: None when not given, () for ``all``, else the items (``JUDGE`` or ``JUDGE/METHOD``)."""
    if value is None:
        return None
    if value.strip() == "all":
        return ()
    items = tuple(item.strip() for item in value.split(","))
    if any(not item or item.startswith("/") or item.endswith("/") for item in items):
        raise click.BadParameter(f"expected 'all' or a comma-separated list of JUDGE or JUDGE/METHOD, got {value!r}")
    return items


def recorded_specs(spec: str, wanted: tuple[str, ...]) -> list[str]:
    """One replay spec per (judge, method) label pair recorded in ``spec``'s file, in file order,
    keeping those ``wanted`` names (all when empty) and the spec's own filters and options.

    A :class:`SpecError` when ``spec`` is not a replay spec, a label could add spec options, or an
    item of ``wanted`` matches nothing recorded.
    """
    from rankkit.judges.simulated.replay import recorded_labels

    parsed = parse_spec(spec)
    if parsed.name != "replay" or len(parsed.positional) != 1:
        raise SpecError(f"--recorded-judges needs replay:FILE judges, got {spec!r}")
    path = parsed.positional[0]
    pairs = [(str(j) if j is not None else None, str(m) if m is not None else None) for j, m in recorded_labels(path)]
    for label in (label for pair in pairs for label in pair if label is not None):
        if any(char in label for char in SPEC_SYNTAX):
            raise SpecError(
                f"{path}: the recorded label {label[:60]!r} holds one of {SPEC_SYNTAX!r}; it cannot be selected"
            )
    keep = [
        (j, m)
        for j, m in pairs
        if parsed.options.get("judge", j) == j
        and parsed.options.get("method", m) == m
        and (not wanted or j in wanted or f"{j}/{m}" in wanted)
    ]
    matched = {item for item in wanted if any(item in (j, f"{j}/{m}") for j, m in keep)}
    if set(wanted) - matched or not keep:
        missing = ", ".join(sorted(set(wanted) - matched)) or "any judge"
        recorded = ", ".join(f"{j}/{m}" for j, m in pairs)
        raise SpecError(f"--recorded-judges: {path} records no {missing}; it records {recorded}")
    options = {k: v for k, v in parsed.options.items() if k not in ("judge", "method")}
    return [
        "replay:" + ",".join([path, *(f"{k}={v}" for k, v in {**options, "judge": j, "method": m}.items() if v)])
        for j, m in keep
    ]


def judge_specs(given: tuple[str, ...], recorded: tuple[str, ...] | None) -> list[str | None]:
    """The judges to report: each ``--judge`` (expanded by ``--recorded-judges`` when given); [None] for the default."""
    if recorded is None:
        return list(given) or [None]
    if not given:
        raise click.UsageError("--recorded-judges needs --judge replay:FILE")
    return [spec for one in given for spec in recorded_specs(one, recorded)]


def check_specs(specs: list[str | None]) -> None:
    """Read every spec against its backend's declaration before any judge is built, so that a typo in
    the last ``--judge`` stops the command before the first judge is paid for (:class:`SpecError`)."""
    from rankkit.judges.backends import backend, read_settings, spec_name

    for spec in specs:
        if spec is not None:
            read_settings(backend(spec_name(checked_judge_spec(spec))), spec)


@click.command("judge-report")
@data_options
@several_judges_options
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full report as JSON.")
@click.option(
    "--pairs-per-task",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Candidate pairs sampled per task (seeded); 0 = every pair.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples over tasks for the 95% intervals (0 = none).",
)
@click.option(
    "--recorded-judges",
    default=None,
    callback=lambda ctx, param, value: parse_recorded_judges(value),
    help="With --judge replay:FILE: report every judge/method recorded in FILE ('all'), or those listed "
    "(comma-separated JUDGE or JUDGE/METHOD), side by side.",
)
@guarded
def judge_report_command(
    data: DataOptions, judges_options: SeveralJudgesOptions, out, pairs_per_task, resamples, recorded_judges
) -> None:
    """Measure a judge's slot and length biases, order consistency, accuracy, agreement (kappa, alpha) and
    calibration with the humans (both orders per pair); several judges side by side on the same pairs."""
    from rankkit.judges import make_judge
    from rankkit.reports.judge_report import judge_report

    specs = judge_specs(judges_options.judge_specs, recorded_judges)
    check_specs(specs)
    prepare_output(out)
    reports = []
    with judging(data, judges_options.one(specs[0])) as inputs:  # the tasks and the one cache all judges share
        for spec in specs:
            judge = inputs.judge if spec == specs[0] else make_judge(checked_judge_spec(spec))
            if judge is not inputs.judge:
                announce_judge(judge, inputs.spec if spec is None else spec)
            try:
                reports.append(
                    judge_report(
                        inputs.tasks,
                        judge,
                        inputs.cache,
                        pairs_per_task=pairs_per_task or None,
                        seed=judges_options.seed,
                        resamples=resamples,
                        progress=not judges_options.quiet,
                        judge_spec=inputs.spec if spec == specs[0] else spec,
                        data=str(inputs.path),
                    )
                )
            finally:
                if judge is not inputs.judge:
                    judge.close()
    write_reports(reports, out)


def write_reports(reports: list[dict], out: str | None) -> None:
    """Print one report in full, or several side by side; write the JSON (``--out``): one report as
    itself, several as ``{"reports": [...]}``."""
    from rankkit.cli.support import write_json
    from rankkit.reports.judge_report_text import format_report, format_side_by_side

    say(format_report(reports[0]) if len(reports) == 1 else format_side_by_side(reports))
    if out:
        write_json(reports[0] if len(reports) == 1 else {"reports": reports}, out)
        say(f"report written to {out}")
