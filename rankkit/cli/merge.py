"""``rankkit merge``: the parts of a sharded run (``compare --shard I/N --out PART``) as one results file."""

from __future__ import annotations

import click

from rankkit.cli.support import fail, guarded, prepare_output, say, write_json


@click.command("merge")
@click.argument("parts", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--out", type=click.Path(dir_okay=False), required=True, help="The merged results JSON to write.")
@guarded
def merge_command(parts: tuple[str, ...], out: str) -> None:
    """Combine the parts of a run split with `compare --shard I/N` into the results of the whole run
    (or the parts of `record --shard I/N`, files ending in .jsonl, into the whole recording).

    The merged file is what one process running every task writes, timings aside. Parts of another
    run, a shard given twice or missing, and a malformed part are refused (exit 2, naming the file).

    e.g. rankkit merge part-*.json -o results.json
    """
    from rankkit.runs.merge import merge_parts, merge_recordings
    from rankkit.runs.recording import write_judgments

    recordings = [part.endswith(".jsonl") for part in parts]
    if any(recordings) and not all(recordings):
        fail("give either results parts (compare --shard, .json) or recording parts (record --shard, .jsonl)")
    prepare_output(out)
    if all(recordings):
        count = write_judgments(merge_recordings(parts), out)
        say(f"{len(parts)} parts, {count} recorded comparisons merged; written to {out}", err=True)
        return
    result = merge_parts(parts)
    write_json(result.to_dict(), out)
    tasks, shards = len(result.tasks), len(parts)
    say(f"{shards} parts, {tasks} tasks, {len(result.strategies)} strategies merged; written to {out}", err=True)
