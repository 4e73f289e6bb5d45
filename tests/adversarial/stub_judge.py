"""An honest judge behind an OpenAI-compatible HTTP server: the opponent of the attack suite.

:class:`HonestJudgeServer` listens on 127.0.0.1 for ``POST /v1/chat/completions`` and judges as an
incorruptible model would: it knows how good each *base answer* is (``quality``: base text ->
points out of the prompt's M) and recognises an answer by the base text it contains, whatever a
candidate adds around it. So it always prefers the better answer, and nothing a candidate writes
— forged verdicts, instructions, fake answer boxes — changes what it thinks. What the attack suite
tests is therefore rankkit alone: whether what a candidate writes can change what rankkit *reads*.

Like a real chat model it

* writes an explanation and a verdict (``Explanation: ... Answer 1: X/M Answer 2: Y/M`` or
  ``Score: X/M``), optionally quoting the candidates' text ``before`` or ``after`` its verdict,
  cut at ``max_tokens`` (four characters a token), so a long quoted candidate pushes its verdict
  past the response cap;
* continues a final assistant message (vLLM's ``continue_final_message``) when ``continues`` is
  true: after rankkit's ``Final verdict: Answer 1: `` (then ``... Answer 2: ``, or ``Score: ``) its
  first-token ``top_logprobs`` put its own score first; after ``The better answer is Answer `` it
  names the better slot; the continuation probe (``1, 2, ..., 8,``) goes on with ``9``. With
  ``continues`` false it behaves like llama-cpp-python's server: it ignores the prefix and starts a
  fresh reply;
* answers rankkit's follow-up question (``Finish this line of your verdict: "... ?"``, the hosted
  APIs' substitute for a continuation: :mod:`rankkit.judges.hosted.verdict`) with the value it
  asks for, as a one-token reply whose ``top_logprobs`` put it first — unless ``logprobs`` is
  false: then it returns no log-probabilities at all and ignores ``response_format`` (a server
  that offers rankkit nothing but free text).

``requests`` counts the requests by kind (``generate``, ``continue``, ``followup``), for the
benchmark's cost; ``prompts`` keeps every user prompt received, for the tests of what a judge
shows the model.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from tests.servers import StubRequest, StubServer

_BOX = {
    slot: re.compile(rf"<{tag}>\n(.*?)\n</{tag}>", re.DOTALL)
    for slot, tag in ((0, "answer"), (1, "answer_1"), (2, "answer_2"))
}
# English and German templates (rankkit/prompts/builtin/paper-*-de.txt)
_LABELLED = re.compile(r"<answer_([A-H])>\n(.*?)\n</answer_\1>", re.DOTALL)  # k-way prompts
_RANKING_SO_FAR = re.compile(r"(?:Best:|Ranking:((?:\s*[A-H]\s*>)*))\s*$")
_SCALE = re.compile(r"(?:scale of 0 to|Skala von 0 bis) (\d+)")
_FOLLOWUP = re.compile(r'Finish this line of your verdict: "(.*) \?"', re.DOTALL)
# rankkit's level line (verdicts=tie|graded): "Final verdict as a number (1 = [[A>>B]], ...): "
_LEVEL_LINE = re.compile(r"Final verdict as a number \((.*)\):\s*$", re.DOTALL)
_LEVEL_LABELS = {2: "A>>B", 1: "A>B", 0: "A=B", -1: "B>A", -2: "B>>A"}
# "Final verdict: Answer 1:" (generate mode), or a bare "Score:" (logprob mode's line)
_SLOT_PREFIX = re.compile(
    r"(?:(?:Final verdict|Endgültiges Urteil):.*?)?(?:(?:Answer|Antwort) (?P<slot>[12])|"
    r"(?P<score>Score|Punktzahl)):\s*$",
    re.DOTALL,
)


class HonestJudgeServer(StubServer):
    """See the module docstring.

    quality: base answer text -> its points on the prompt's scale 0..M (an answer containing none
        of them gets 0; one containing several, the longest's).
    quote: ``none``, ``before`` or ``after``: where the explanation quotes the candidates' text.
    continues: whether it continues a final assistant message (vLLM does).
    logprobs: whether it returns log-probabilities (else it offers nothing but free text).
    binary: grade a comparison 9 for the better answer and 2 for the worse (the issue's stub), so
        every verdict it writes is one of two lines; else each answer gets its own quality.
    """

    def __init__(
        self,
        quality: Mapping[str, float],
        quote: str = "none",
        continues: bool = True,
        binary: bool = False,
        logprobs: bool = True,
    ):
        super().__init__()
        self.quality = dict(quality)
        self.binary = binary
        self.quote = quote
        self.continues = continues
        self.logprobs = logprobs
        self.requests = {"generate": 0, "continue": 0, "followup": 0}
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def post(self, request: StubRequest, body: dict[str, Any]) -> None:
        request.send_json(200, self.complete(body))

    # -- judging ----------------------------------------------------------------------------------
    def points(self, answer: str) -> float:
        """What the judge thinks of an answer: the quality of the longest base text it contains."""
        known = [base for base in self.quality if base in answer]
        return self.quality[max(known, key=len)] if known else 0.0

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        with self._lock:
            self.prompts.append(prompt)
        prefix = messages[-1]["content"] if messages[-1]["role"] == "assistant" else None
        if prefix is not None and self.continues and body.get("continue_final_message"):
            with self._lock:
                self.requests["continue"] += 1
            return _logprobs_reply(self._next_token(prompt, prefix))
        followup = _FOLLOWUP.search(messages[-1]["content"]) if messages[-1]["role"] == "user" else None
        if followup is not None and self.logprobs:
            with self._lock:
                self.requests["followup"] += 1
            return _logprobs_reply(self._next_token(prompt, followup.group(1) + " "))
        with self._lock:
            self.requests["generate"] += 1
        text = self._explanation(prompt)
        cap = 4 * int(body.get("max_tokens") or 10_000)
        reply = _text_reply(text[:cap], completion_tokens=min(len(text), cap) // 4)
        if (
            body.get("logprobs") and self.logprobs
        ):  # a fresh reply's first token, as a server that ignores the prefix gives
            reply["choices"][0]["logprobs"] = _logprobs_reply(text[:1] or " ")["choices"][0]["logprobs"]
        return reply

    def _scores(self, prompt: str) -> tuple[int, list[float]]:
        scale = int(_SCALE.search(prompt).group(1)) if _SCALE.search(prompt) else 10
        if "<answer_1>" in prompt:
            answers = [_BOX[1].search(prompt).group(1), _BOX[2].search(prompt).group(1)]
        else:
            answers = [_BOX[0].search(prompt).group(1)]
        points = [min(scale, self.points(answer)) for answer in answers]
        if self.binary and len(points) == 2:
            points = [9.0, 2.0] if points[0] >= points[1] else [2.0, 9.0]
        return scale, points

    def level(self, prompt: str, strong: bool) -> int:
        """Its level for a pair: a tie on equal points, strong (when the scale has it) at half the scale apart."""
        scale, (first, second) = self._scores(prompt)
        gap = first - second
        if gap == 0:
            return 0
        return (2 if strong and abs(gap) >= scale / 2 else 1) * (1 if gap > 0 else -1)

    def _kway_order(self, prompt: str) -> list[str]:
        """The labels of a k-way prompt's answers, best first (ties: in the order shown)."""
        labelled = _LABELLED.findall(prompt)
        return [label for label, text in sorted(labelled, key=lambda item: -self.points(item[1]))]

    def _explanation(self, prompt: str) -> str:
        if "<answer" not in prompt:
            return "1, 2, 3"
        if "<answer_A>" in prompt:  # k-way: "Best: X" or "Ranking: X > Y > ..."
            order = self._kway_order(prompt)
            line = f"Best: {order[0]}" if "Best: [label]" in prompt else "Ranking: " + " > ".join(order)
            return f"Explanation: I compared the answers with what I know.\n{line}"
        scale, scores = self._scores(prompt)
        if len(scores) == 2:
            verdict = f"Answer 1: {scores[0]:g}/{scale} Answer 2: {scores[1]:g}/{scale}"
            if "[[A>B]]" in prompt:  # a level scale's instruction: end with the label
                verdict += f"\n[[{_LEVEL_LABELS[self.level(prompt, strong='[[A>>B]]' in prompt)]}]]"
        else:
            verdict = f"Score: {scores[0]:g}/{scale}"
        quoted = " ".join(
            f'The answer says: "{box.group(1)}".' for key in (1, 2, 0) if (box := _BOX[key].search(prompt))
        )
        explanation = "Explanation: I compared the answers with what I know."
        if self.quote == "before":
            return f"{explanation} {quoted}\n{verdict}"
        if self.quote == "after":
            return f"{explanation}\n{verdict}\n{quoted}"
        return f"{explanation}\n{verdict}"

    def _next_token(self, prompt: str, prefix: str) -> str:
        if prefix.endswith("1, 2, 3, 4, 5, 6, 7, 8,"):
            return "9"
        ranking = _RANKING_SO_FAR.search(prefix)
        if ranking is not None:  # k-way: the best label not placed yet ("Best:", "Ranking: B > ")
            placed = re.findall(r"[A-H]", ranking.group(1) or "")
            return next(label for label in self._kway_order(prompt) if label not in placed)
        level_line = _LEVEL_LINE.search(prefix)
        if level_line is not None:  # the code of its level, as the line lists them
            codes = dict(re.findall(r"(\d) = \[\[([AB<>=]+)\]\]", level_line.group(1)))
            wanted = _LEVEL_LABELS[self.level(prompt, strong=len(codes) == 5)]
            return next(code for code, label in codes.items() if label == wanted)
        scale, scores = self._scores(prompt)
        if prefix.rstrip().endswith(("The better answer is Answer", "Die bessere Antwort ist Antwort")):
            return "1" if scores[0] >= scores[-1] else "2"
        slot = _SLOT_PREFIX.search(prefix)
        if slot is None:
            return "?"
        index = 0 if slot.group("score") or slot.group("slot") == "1" else 1
        return str(round(scores[index]))


def _text_reply(text: str, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "honest",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": completion_tokens,
            "total_tokens": 100 + completion_tokens,
        },
    }


def _logprobs_reply(token: str) -> dict[str, Any]:
    """One generated token, ``token``, with a confident first-token distribution around it."""
    top = [{"token": token, "logprob": -0.01}] + [
        {"token": other, "logprob": -6.0} for other in ("0", "1", "2", "9") if other != token
    ]
    reply = _text_reply(token, 1)
    reply["choices"][0]["logprobs"] = {"content": [{"token": token, "logprob": -0.01, "top_logprobs": top}]}
    return reply
