"""``rankkit generate``: every model's answers to a questions file, as a task file for ``compare`` and ``leaderboard``.

The options that say which questions, which models and how they decode (:data:`generation_options`)
are shared with ``rankkit leaderboard --questions``.
"""

from __future__ import annotations

from dataclasses import dataclass

import click

from rankkit.cli.options import cache_options, grouped, option_group
from rankkit.cli.support import guarded, open_cache, say


@dataclass(frozen=True)
class GenerationOptions:
    """The questions, the models (specs as given, each possibly several) and the decoding of every answer."""

    questions_path: str | None
    models_text: tuple[str, ...]
    max_new_tokens: int
    temperature: float

    def model_specs(self) -> list[str]:
        """Every model spec given, in order (``--models`` may be repeated and holds comma-separated specs)."""
        from rankkit.runs.generation import split_model_specs

        return [spec for text in self.models_text for spec in split_model_specs(text)]


#: The options of :class:`GenerationOptions`; the command receives ``generation``.
generation_options = option_group(
    click.option(
        "--questions",
        "questions_path",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="Questions JSONL: task_id and prompt (a string or chat messages) or turns (user turns, "
        "answered one by one); optional reference, checklist, category. See docs/generate.md.",
    ),
    click.option(
        "--models",
        "models_text",
        multiple=True,
        help="Comma-separated model specs (openai:MODEL, anthropic:MODEL, vllm:MODEL, hf:MODEL, sim:NAME; "
        "name=NAME sets the system name); repeatable.",
    ),
    click.option(
        "--max-new-tokens",
        type=click.IntRange(min=1),
        default=1024,
        show_default=True,
        help="The longest answer to one turn, in tokens.",
    ),
    click.option(
        "--temperature",
        type=click.FloatRange(min=0.0, max=2.0),
        default=0.0,
        show_default=True,
        help="Sampling temperature of the answers (0: greedy).",
    ),
    grouped(GenerationOptions, "generation"),
)


def run_generation(generation: GenerationOptions, out: str, cache: object, seed: int, quiet: bool) -> object:
    """Generate the task file ``out`` and print the bill on stderr; the bill."""
    from rankkit.runs.generation import Decoding, generate_file

    specs = generation.model_specs()
    if not generation.questions_path or not specs:
        raise click.UsageError("--questions and --models go together: give both")
    decoding = Decoding(generation.max_new_tokens, generation.temperature, seed)
    bill = generate_file(generation.questions_path, specs, out, cache, decoding, progress=not quiet)
    say(bill.line(), err=True)
    return bill


@click.command("generate")
@generation_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="tasks.jsonl",
    show_default=True,
    help="The task file to write (one task per question, one candidate per model).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The models' sampling seed.")
@cache_options(
    "The cache: an SQLite file (default .rankkit/cache.sqlite, or $RANKKIT_CACHE) or a postgresql:// URL; a "
    "generation that stops resumes from it."
)
@guarded
def generate_command(generation: GenerationOptions, out, seed, cache_path, no_cache, quiet) -> None:
    """Answer every question with every model and write a task file; a rerun pays only for what is missing.

    e.g. rankkit generate --questions "$(rankkit samples questions)" --models sim:good,quality=0.8,sim:bad
    """
    cache = open_cache(cache_path, no_cache)
    try:
        run_generation(generation, out, cache, seed, quiet)
    finally:
        cache.close()
    say(f"tasks written to {out}", err=True)
