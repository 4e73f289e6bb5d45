"""Which settings of a judge spec a file may choose: a file never decides where prompts and keys go.

A spec from a leaderboard or run file may be someone else's. Options marked ``trusted_only``,
``network=True`` backends and ``loads_model=True`` backends (:mod:`rankkit.judges.backends`) are
refused from a file (exit 2) unless ``--judge`` repeats it or ``--trust-file-judge`` is passed.
"""

from __future__ import annotations

from rankkit.data.specs import Spec
from rankkit.judges.backends import backend, read_settings, spec_name, spec_text


def file_spec_risks(spec: str | Spec) -> list[str]:
    """The settings of ``spec`` a file may not choose on its own (a panel checked member by member).

    ``OPTION=VALUE`` per trusted-only option, then ``backend NAME (...)`` for a network or
    model-loading backend; empty when safe. An unknown backend or option raises
    :class:`~rankkit.data.specs.SpecError`.

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
        from rankkit.judges.composite.panel import member_specs

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
