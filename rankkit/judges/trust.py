"""Which settings of a judge spec a file may choose: a file never decides where prompts and keys go.

A judge spec can come from a file rather than the command line: a leaderboard's ``judge.spec``
(``rankkit leaderboard add``), a run file's or results file's ``judge`` (``--config``). Such a file
may have been written by someone else, so it must not choose where the task prompts and answers
are sent, or which secret goes with them. Each backend declares what only the person running the
command may choose, in its descriptor (:mod:`rankkit.judges.backends`): options marked
``trusted_only`` (``openai``, ``anthropic``: ``base_url``, ``api_key_env``, ``batch_journal``) and
``network=True`` for a backend that sends every prompt over the network (``openai``,
``anthropic``), and ``loads_model=True`` for one that loads the model its spec names from a hub or
a directory (``hf``, ``vllm``: a file-chosen download), which a file may not choose at all.
:func:`file_spec_risks` lists what a spec sets of those (a panel's members included); the command
line refuses a file's spec with any (exit 2) unless the same judge is given on the command line
(``--judge``) or ``--trust-file-judge`` is passed (:mod:`rankkit.cli_support`).
"""

from __future__ import annotations

from rankkit.judges.backends import backend, read_settings, spec_name, spec_text
from rankkit.specs import Spec


def file_spec_risks(spec: str | Spec) -> list[str]:
    """The settings of ``spec`` that a judge spec read from a file may not choose on its own.

    Parameters
    ----------
    spec : str | Spec
        A judge spec (``openai:MODEL,base_url=...``); a ``panel:`` spec is checked member by member.

    Returns
    -------
    list[str]
        One entry per risk, in spec order: ``OPTION=VALUE`` for each trusted-only option the spec
        sets, then ``backend NAME (...)`` for a network backend or one that loads a named model;
        empty when a file may choose the spec. An unknown backend or option raises
        :class:`~rankkit.specs.SpecError` (as building it would).

    Examples
    --------
    >>> file_spec_risks("sim:preset=gpt4")
    []
    >>> file_spec_risks("openai:m,base_url=http://h/v1,concurrency=2")
    ['base_url=http://h/v1', 'backend openai (sends every prompt over the network)']
    """
    text = spec_text(spec)
    descriptor = backend(spec_name(text))
    if descriptor.name == "panel":  # a panel only combines its members: each member is a spec of its own
        from rankkit.judges.panel import member_specs

        return [risk for member in member_specs(read_settings(descriptor, text)) for risk in file_spec_risks(member)]
    given = descriptor.read(text).options
    risks = [
        f"{key}={value}"
        for key, value in given.items()
        if key in {option.name for option in descriptor.options if option.trusted_only}
    ]
    if descriptor.network:
        risks.append(f"backend {descriptor.name} (sends every prompt over the network)")
    if descriptor.loads_model:
        risks.append(f"backend {descriptor.name} (loads the model it names, downloading it from a hub if needed)")
    return risks
