"""Do conversations leave the cache keys of string tasks as they were, and key every turn? (issue 39, item 1)

For the bundled string samples (``tasks``, ``leaderboard``) and five judges (the simulator, local
stand-ins in generate and logprob mode, a vLLM stand-in with the generic template, the OpenAI
judge), every pairwise and pointwise cache key is hashed into one digest. Run with this checkout
and with ``--before REV`` (default 591bfd9, the commit before conversations): equal digests mean no
cache or recording made before is invalidated. Then, on the bundled ``conversations`` sample, it
counts the keys that change when only a prompt's first turn changes (all of them should).

    python benchmarks/conversation_keys.py [--before 591bfd9]

Writes ``benchmarks/results/conversation_keys.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import replace
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUDGES = [
    "sim:preset=gpt4",
    "hf:m,mode=generate",
    "hf:m,mode=logprob",
    "vllm:m,template=generic",
    "openai:gpt-4.1,base_url=http://127.0.0.1:9/v1",
]


def key_digest() -> dict[str, object]:
    """The number of keys and the SHA-256 (16 hex digits) of every key of the string samples, in order."""
    from rankkit.data.samples import sample_path
    from rankkit.data.tasks import load_tasks
    from rankkit.judges import make_judge
    from rankkit.judgments.cache import judgment_key

    digest, count = hashlib.sha256(), 0
    for name in ("tasks", "leaderboard"):
        tasks = load_tasks(sample_path(name))
        for spec in JUDGES:
            judge = make_judge(spec, stand_in=True)
            for task in tasks:
                requests = [*itertools.permutations(task.candidates, 2), *((c,) for c in task.candidates)]
                for request in requests:
                    kind = "pair" if len(request) == 2 else "point"
                    digest.update(judgment_key(judge.fingerprint, kind, judge.request_key(task, *request)).encode())
                    count += 1
    return {"keys": count, "sha256": digest.hexdigest()[:16]}


def turn_one_sensitivity() -> tuple[int, int]:
    """(keys that change, keys) when only the first message of each conversation sample prompt changes."""
    from rankkit.data.conversations import Message
    from rankkit.data.samples import sample_path
    from rankkit.data.tasks import load_tasks
    from rankkit.judges import make_judge

    changed = total = 0
    for spec in JUDGES:
        judge = make_judge(spec, stand_in=True)
        for task in load_tasks(sample_path("conversations")):
            first = task.prompt[0]
            other = replace(task, prompt=(Message(first.role, first.content + " (edited)"), *task.prompt[1:]))
            for a, b in itertools.permutations(task.candidates, 2):
                total += 1
                changed += judge.request_key(task, a, b) != judge.request_key(other, a, b)
    return changed, total


def digest_at(revision: str) -> dict[str, object]:
    """:func:`key_digest` computed by the rankkit of ``revision`` (its package extracted to a temporary folder)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "rankkit"], capture_output=True, check=True)
    with tempfile.TemporaryDirectory() as folder:
        tarfile.open(fileobj=BytesIO(archive.stdout)).extractall(folder, filter="data")
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import conversation_keys as k; import json; print(json.dumps(k.key_digest()))"
        env = {**os.environ, "PYTHONPATH": folder}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=folder
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="591bfd9")
    args = parser.parse_args()
    before, after = digest_at(args.before), key_digest()
    changed, total = turn_one_sensitivity()
    lines = [
        "# Cache keys with conversations (benchmarks/conversation_keys.py)",
        "",
        f"- string samples, {len(JUDGES)} judges: before ({args.before}) {before['keys']} keys, sha256 {before['sha256']}; "
        f"after {after['keys']} keys, sha256 {after['sha256']}: {'identical' if before == after else 'DIFFERENT'}",
        f"- conversations sample: {changed} of {total} pairwise keys change when only turn 1 of the prompt changes",
    ]
    print("\n".join(lines))
    out = ROOT / "benchmarks" / "results" / "conversation_keys.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
