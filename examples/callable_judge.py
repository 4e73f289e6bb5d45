"""``callable``: the smallest complete third-party judge for rankkit 0.3, on any Python function.

A function ``f(prompt, choices) -> {choice: log-probability}`` is the model: it is asked what comes
next after a judge prompt (``"1"`` or ``"2"`` after "The better answer is Answer", a digit after
"Score:"). A runtime is a class with four methods and a backend name; ``llm_backend`` declares its
judge, so rankkit's prompts, modes, verdict arithmetic, cache fingerprint, dry run, ``rankkit judges``
and ``--judge`` completion all work without anything else. Make it available under its name either:

* in code: importing this module registers it (``register_backend`` below), then
  ``--judge callable:NAME,mode=logprob`` works in that process for functions in ``FUNCTIONS``;
* for every user of an installed package: drop ``register_backend`` and declare an entry point::

      [project.entry-points."rankkit.judges"]
      callable = "mypackage.callable_judge:BACKEND"

A toy function that prefers the longer answer (the prompt shows each inside ``<answer_N>`` tags):

>>> import re, rankkit
>>> def longer(prompt, choices):
...     lengths = {n: len(text) for n, text in re.findall(r"<answer_(\\d)>(.*?)</answer_", prompt, re.S)}
...     return {c: 0.0 if c == max(lengths, key=lengths.get) else -9.0 for c in choices}
>>> FUNCTIONS["longer"] = longer
>>> task = {"task_id": "q1", "prompt": "What is the capital of France?", "candidates": [
...     {"id": "a", "text": "Paris."}, {"id": "b", "text": "Paris, on the Seine."}, {"id": "c", "text": "Lyon"}]}
>>> result = rankkit.compare([task], strategies=["knockout"], judge="callable:longer,mode=logprob")
>>> result.judge.description, result.strategies[0].tasks[0].ranking[0]
('callable:longer (mode=logprob)', 'b')
"""

from rankkit.data.specs import SpecError
from rankkit.judges import Argument, register_backend
from rankkit.judges.llm.judge import llm_backend
from rankkit.judges.llm.runtime import LLMRuntime

#: The functions ``callable:NAME`` may name: NAME -> ``f(prompt, choices) -> {choice: logprob}``.
FUNCTIONS = {}


class CallableRuntime(LLMRuntime):
    """Asks ``FUNCTIONS[name]`` for the next token's log-probabilities; writes no text."""

    backend = "callable"

    def __init__(self, name):
        if name not in FUNCTIONS:
            raise SpecError(f"callable: no function {name!r} (known: {', '.join(FUNCTIONS)})")
        self.name, self.function = name, FUNCTIONS[name]

    def identity(self):  # the cache fingerprint: rename the function when it changes
        return {"name": self.name}

    def next_token_logprobs(self, conversations, *, prefixes, choices):  # one prefix and one choice set per row
        for index, (conversation, prefix, row) in enumerate(zip(conversations, prefixes, choices)):
            yield index, self.function(conversation[-1]["content"] + prefix, list(row))

    def generate(self, conversations, **decoding):
        raise NotImplementedError("a log-probability function writes no text: use mode=logprob")

    answer_logliks = generate


BACKEND = register_backend(
    llm_backend(
        "callable",
        "a Python function returning next-token log-probabilities",
        lambda settings: CallableRuntime(settings.argument),
        argument=Argument("function", "callable:longer,mode=logprob"),
    )
)


def longer(prompt, choices):
    """The docstring's toy: the longer of the two answers shown (``<answer_N>`` tags) is the better."""
    import re

    lengths = {n: len(text) for n, text in re.findall(r"<answer_(\d)>(.*?)</answer_", prompt, re.S)}
    return {c: 0.0 if c == max(lengths, key=lengths.get) else -9.0 for c in choices}


if __name__ == "__main__":  # python examples/callable_judge.py: rank one task with the toy and say so
    import rankkit

    FUNCTIONS["longer"] = longer
    task = {
        "task_id": "q1",
        "prompt": "What is the capital of France?",
        "candidates": [
            {"id": "a", "text": "Paris."},
            {"id": "b", "text": "Paris, on the Seine."},
            {"id": "c", "text": "Lyon"},
        ],
    }
    ranking = rankkit.rank(task, strategy="knockout", judge="callable:longer,mode=logprob")
    texts = {c["id"]: c["text"] for c in task["candidates"]}
    print("judge callable:longer,mode=logprob (prefers the longer answer), strategy knockout")
    for place, cid in enumerate(ranking.ranking, start=1):
        print(f"{place}. {cid}: {texts[cid]!r} (score {ranking.scores[cid]:.2f})")
