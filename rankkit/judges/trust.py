"""Which settings of a judge spec a file may choose: a file never decides where prompts and keys go.

A judge spec can come from a file rather than the command line: a leaderboard's ``judge.spec``
(``rankkit leaderboard add``), a run file's or results file's ``judge`` (``--config``). Such a file
may have been written by someone else, so it must not choose where the task prompts and answers
are sent, or which secret goes with them. Each backend declares what only the person running the
command may choose, in its factory's module:

* ``TRUSTED_ONLY_OPTIONS`` — a set of option names that redirect traffic or credentials
  (``openai``: ``base_url``, ``api_key_env``);
* ``NETWORK_BACKEND = True`` — the backend sends every prompt over the network (``openai``), so a
  file may not choose it at all.

:func:`file_spec_risks` lists what a spec sets of those (a panel's members included); the
command line refuses a file's spec with any (exit 2) unless the same judge is given on the
command line (``--judge``) or ``--trust-file-judge`` is passed (:mod:`rankkit.cli_support`).
"""

from __future__ import annotations

from rankkit.specs import Spec, parse_spec


def file_spec_risks(spec: str | Spec) -> list[str]:
    """The settings of ``spec`` that a judge spec read from a file may not choose on its own.

    Parameters
    ----------
    spec:
        A judge spec (``openai:MODEL,base_url=...``); a ``panel:`` spec is checked member by member.

    Returns
    -------
    One entry per risk, in spec order: ``OPTION=VALUE`` for each trusted-only option the spec
    sets, then ``backend NAME (sends every prompt over the network)`` for a network backend;
    empty when a file may choose the spec. An unknown backend raises
    :class:`~rankkit.specs.SpecError` (as building it would).

    >>> file_spec_risks("sim:preset=gpt4")
    []
    >>> file_spec_risks("openai:m,base_url=http://h/v1,concurrency=2")
    ['base_url=http://h/v1', 'backend openai (sends every prompt over the network)']
    """
    from rankkit.judges import backend_module

    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.name == "panel":  # a panel only combines its members: each member is a spec of its own
        from rankkit.judges.panel import split_panel_spec

        members, _ = split_panel_spec(parsed.text or str(spec))
        return [risk for member in members for risk in file_spec_risks(member)]
    module = backend_module(parsed.name)
    trusted_only = getattr(module, "TRUSTED_ONLY_OPTIONS", frozenset())
    risks = [f"{key}={value}" for key, value in parsed.options.items() if key in trusted_only]
    if getattr(module, "NETWORK_BACKEND", False):
        risks.append(f"backend {parsed.name} (sends every prompt over the network)")
    return risks
