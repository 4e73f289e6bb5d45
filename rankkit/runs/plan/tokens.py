"""Prompt sizes for a dry run: the prompts an LLM judge would be sent, rendered and estimated in tokens.

No tokenizer is loaded: tokens are estimated at :data:`~rankkit.judgments.spend.CHARS_PER_TOKEN` characters each.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankkit.data.conversations import plain_text
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judgments.spend import CHARS_PER_TOKEN, estimate_tokens  # noqa: F401  (CHARS_PER_TOKEN: re-exported)


class PromptSizes:
    """Estimated prompt tokens of an LLM judge's requests, rendered with its own templates.

    ``largest`` keeps, per task id, the largest prompt sized so far (checked against the context).
    """

    def __init__(self, judge: LLMJudge):
        self.judge = judge
        self._means: dict[tuple[str, str], float] = {}
        self.largest: dict[str, int] = {}

    def _seen(self, task: Task, tokens: int) -> int:
        if tokens > self.largest.get(task.task_id, -1):
            self.largest[task.task_id] = tokens
        return tokens

    @staticmethod
    def applies(judge: object) -> bool:
        """Whether ``judge`` renders prompts this class can size: an :class:`~rankkit.judges.llm.judge.LLMJudge`."""
        return isinstance(judge, LLMJudge)

    def point(self, task: Task, candidate: Candidate) -> int:
        """Estimated tokens of the prompt grading ``candidate`` (``loglik``: the bare question and the answer)."""
        if self.judge.mode == "loglik":  # the bare question, then the answer
            return self._seen(task, estimate_tokens(plain_text(task.prompt) + plain_text(candidate.text)))
        return self._seen(task, self._conversation(self.judge.point_prompt(task, candidate).conversation))

    def pair(self, task: Task, first: Candidate, second: Candidate) -> int:
        """Estimated tokens of the prompt comparing ``first`` and ``second`` (PREPAIR: without the analyses)."""
        if self.judge.mode == "loglik":  # each answer after the bare question (the longer is one prompt)
            prompt, texts = plain_text(task.prompt), (plain_text(first.text), plain_text(second.text))
            self._seen(task, estimate_tokens(prompt + max(texts, key=len)))
            return estimate_tokens(2 * prompt + "".join(texts))
        if self.judge.prepair:
            # Rendering PREPAIR's decision prompt would need the analyses; the plain pairwise
            # prompt is the same size but for them (noted in the output).
            from rankkit.prompts import PAIRWISE, prompt_max_points, render_pairwise

            template = self.judge.templates.template(task, PAIRWISE)
            return self._seen(
                task, estimate_tokens(render_pairwise(template, task, first, second, prompt_max_points(task, template)))
            )
        return self._seen(task, self._conversation(self.judge.pair_prompts([(task, first, second)])[0].conversation))

    def group(self, task: Task, candidates: Sequence[Candidate], kind: str) -> int:
        """Estimated tokens of a k-way prompt (``kind`` ``choice``: setwise, ``ranking``: listwise)."""
        from rankkit.prompts.kway import render_kway

        return self._seen(
            task, estimate_tokens(render_kway("setwise" if kind == "choice" else "listwise", task, candidates))
        )

    def mean(self, task: Task, kind: str) -> float:
        """The task's mean estimated prompt of a grade (``point``) or a comparison (``pair``), computed once.

        ``pair`` averages neighbouring candidates in data order, both orders.
        """
        key = (task.task_id, kind)
        if key not in self._means:
            cands = task.candidates
            if kind == "point":
                sizes = [self.point(task, c) for c in cands]
            else:
                pairs = [(cands[i], cands[(i + 1) % len(cands)]) for i in range(len(cands))]
                sizes = [self.pair(task, a, b) for a, b in pairs]
            self._means[key] = sum(sizes) / len(sizes)
        return self._means[key]

    @staticmethod
    def _conversation(conversation: Sequence[dict[str, str]]) -> int:
        return estimate_tokens("".join(turn["content"] for turn in conversation))


def judgment_estimate(sizes: PromptSizes, task: Task, shown: Sequence[Candidate]) -> float:
    """Estimated prompt tokens of the judgment showing ``shown``: a grade, a comparison or a k-way choice."""
    if len(shown) == 1:
        return sizes.point(task, shown[0])
    if len(shown) == 2:
        return sizes.pair(task, shown[0], shown[1])
    return sizes.group(task, shown, "choice")
