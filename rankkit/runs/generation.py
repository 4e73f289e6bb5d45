"""``rankkit generate``: each model's answers to a questions file, written as a task file.

Every answer goes through the model's runtime (:mod:`rankkit.judges.llm.runtime`), so hosted models
get their batch APIs, retries, pacing and prices, and is kept in the judgment cache under the kind
``generation`` (key: the model's identity, the decoding settings and the whole conversation), written
as soon as it arrives: a killed run rerun pays nothing for what it already has. A multi-turn question
(``turns``) is answered turn by turn; turn k sees the model's own earlier answers. Model output is
data: it is stored, shown to the model as its own past turns, and written out, never interpreted.

The file formats are in ``docs/generate.md``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rankkit.data.conversations import read_prompt
from rankkit.data.file_checks import check_system_name
from rankkit.data.specs import SpecError
from rankkit.errors import TaskFormatError
from rankkit.judges.llm.runtime import Chat, Generation, LLMRuntime
from rankkit.judges.simulated.writer import SimulatedWriter

#: The cache kind of a generated answer.
GENERATION_KIND = "generation"
QUESTION_FIELDS = {"task_id", "prompt", "turns", "reference", "checklist", "category"}


@dataclass(frozen=True)
class Question:
    """One question: the ``opening`` conversation (ends with a user message) and the user ``followups``.

    ``prompt`` is what the task file's ``prompt`` holds (the question's string or message list).
    """

    task_id: str
    prompt: str | Chat
    opening: Chat
    followups: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decoding:
    """The decoding of every answer (part of each answer's cache key)."""

    max_new_tokens: int = 1024
    temperature: float = 0.0
    seed: int = 0


@dataclass
class Writer:
    """A model that answers: its short ``name`` (the candidates' ``system``), its ``spec`` and its runtime."""

    name: str
    spec: str
    runtime: LLMRuntime


@dataclass
class GenerationBill:
    """What generating cost: answers new and from the cache, tokens, USD (new answers only)."""

    new: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0

    def charge(self, usage: dict[str, Any]) -> None:
        self.new += 1
        self.prompt_tokens += int(usage.get("prompt_tokens", 0))
        self.completion_tokens += int(usage.get("completion_tokens", 0))
        self.usd += usage.get("usd_nano", 0) / 1e9

    def line(self) -> str:
        """``generated: 6 answers (4 new, 2 cached) · 1,230 tokens (1,200 in, 30 out) · usd 0.0012``."""
        tokens = self.prompt_tokens + self.completion_tokens
        return (
            f"generated: {self.new + self.cached} answers ({self.new} new, {self.cached} cached) · "
            f"{tokens:,} tokens ({self.prompt_tokens:,} in, {self.completion_tokens:,} out) · usd {self.usd:.4f}"
        )

    def with_judging(self, cost: Any) -> str:
        """One bill for generating and judging (``cost``: the judging's :class:`~rankkit.strategies.matches.Cost`)."""
        prompt = self.prompt_tokens + cost.prompt_tokens
        completion = self.completion_tokens + cost.completion_tokens
        return (
            f"bill: {self.new + self.cached} answers ({self.new} new, {self.cached} cached) + "
            f"{cost.judge_calls + cost.cache_hits} judgments ({cost.judge_calls} new, {cost.cache_hits} cached) · "
            f"{prompt + completion:,} tokens ({prompt:,} in, {completion:,} out) · usd {self.usd + cost.usd:.4f}"
        )


# -- reading the questions file ------------------------------------------------------------------


def _messages(path: str, line: int, value: Any) -> Chat:
    """A ``prompt`` message list, checked as a task's prompt is (:func:`~rankkit.data.conversations.read_prompt`)."""
    return [{"role": m.role, "content": m.content} for m in read_prompt(path, line, "prompt", value)]


def _turns(path: str, line: int, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(turn, str) and turn for turn in value):
        raise TaskFormatError(path, line, "turns", "expected a non-empty list of non-empty strings")
    return value


def _extra(path: str, line: int, record: dict[str, Any]) -> dict[str, Any]:
    """The optional fields carried to the task: ``reference``, ``checklist``, ``category``."""
    extra = {name: record[name] for name in ("reference", "checklist", "category") if record.get(name) is not None}
    for name in ("reference", "category"):
        if name in extra and not isinstance(extra[name], str):
            raise TaskFormatError(path, line, name, "expected a string")
    checklist = extra.get("checklist")
    if checklist is not None and not (isinstance(checklist, list) and all(isinstance(i, str) for i in checklist)):
        raise TaskFormatError(path, line, "checklist", "expected a list of strings")
    return extra


def question_from_record(path: str, line: int, record: Any) -> Question:
    """One questions-file line as a :class:`Question`; a :class:`TaskFormatError` naming the field."""
    if not isinstance(record, dict):
        raise TaskFormatError(path, line, None, "expected a JSON object")
    unknown = sorted(set(record) - QUESTION_FIELDS)
    if unknown:
        raise TaskFormatError(path, line, unknown[0], f"unknown field (known: {', '.join(sorted(QUESTION_FIELDS))})")
    task_id = record.get("task_id")
    if isinstance(task_id, bool) or not isinstance(task_id, (str, int)) or not str(task_id).strip():
        raise TaskFormatError(path, line, "task_id", "expected a non-empty string or integer")
    if ("prompt" in record) == ("turns" in record):
        raise TaskFormatError(path, line, "prompt", "give exactly one of 'prompt' and 'turns'")
    extra = _extra(path, line, record)
    if "turns" in record:
        turns = _turns(path, line, record["turns"])
        return Question(str(task_id), turns[0], [{"role": "user", "content": turns[0]}], tuple(turns[1:]), extra)
    prompt = record["prompt"]
    if isinstance(prompt, str):
        if not prompt:
            raise TaskFormatError(path, line, "prompt", "empty prompt")
        return Question(str(task_id), prompt, [{"role": "user", "content": prompt}], (), extra)
    return Question(str(task_id), prompt, _messages(path, line, prompt), (), extra)


def read_questions(path: str | Path) -> list[Question]:
    """The questions of a JSONL file (``task_id`` and ``prompt`` or ``turns``); errors name file, line and field."""
    shown = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise TaskFormatError(shown, None, None, f"cannot read the questions file ({err})") from None
    questions: list[Question] = []
    seen: set[str] = set()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            raise TaskFormatError(shown, number, None, f"not JSON ({err})") from None
        question = question_from_record(shown, number, record)
        if question.task_id in seen:
            raise TaskFormatError(shown, number, "task_id", f"duplicate task id {question.task_id!r}")
        seen.add(question.task_id)
        questions.append(question)
    if not questions:
        raise TaskFormatError(shown, None, None, "no questions")
    return questions


# -- the models ----------------------------------------------------------------------------------

_SPEC_START = re.compile(r"^[A-Za-z][\w.-]*:")


def split_model_specs(text: str) -> list[str]:
    """``a,b,c`` as model specs; a piece ``key=value`` without a ``backend:`` before it is the previous spec's option.

    >>> split_model_specs("sim:strong,quality=0.9,openai:gpt-4o,base_url=http://h:8000/v1,name=g")
    ['sim:strong,quality=0.9', 'openai:gpt-4o,base_url=http://h:8000/v1,name=g']
    """
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        starts = _SPEC_START.match(piece) and "=" not in piece.split(":", 1)[0]
        if specs and not starts:
            specs[-1] += "," + piece
        elif piece:
            specs.append(piece)
    return specs


def _pop_name(spec: str) -> tuple[str, str | None]:
    """``spec`` without its ``name=`` option, and that name (None when not given)."""
    backend, _, rest = spec.partition(":")
    kept, name = [], None
    for piece in rest.split(",") if rest else ():
        if piece.startswith("name="):
            name = piece[len("name=") :]
        else:
            kept.append(piece)
    return f"{backend}:{','.join(kept)}" if kept else backend, name


def writer_name(spec: str) -> tuple[str, str]:
    """The spec to build and the model's short name: ``name=``, else the bare value after the backend."""
    bare, name = _pop_name(spec)
    if name is None:
        backend, _, rest = bare.partition(":")
        argument = rest.split(",")[0]
        if argument and "=" not in argument:  # the bare value after the backend: hf:ORG/MODEL
            name = argument
        else:  # a backend that takes no model (smollm2); a simulated writer must be named
            name = backend if backend != "sim" else ""
    if not name:
        raise SpecError(f"{spec}: give the model a name (name=NAME)")
    check_system_name(name, "--models", "name")
    return bare, name


def build_writer(spec: str) -> Writer:
    """The :class:`Writer` of a model spec: ``sim:`` a :class:`SimulatedWriter`, another its backend's runtime."""
    bare, name = writer_name(spec)
    if bare.partition(":")[0] == "sim":
        return Writer(name, spec, SimulatedWriter.from_spec(bare, name))
    from rankkit.judges import make_judge

    judge = make_judge(bare)
    # replay: and panel: judge but do not answer (and no isinstance check: a hosted runtime would probe)
    if getattr(judge, "runtime", None) is None:
        judge.close()
        raise SpecError(f"{spec}: not a model that answers (use openai:, anthropic:, vllm:, hf:, smollm2 or sim:)")
    return Writer(name, spec, judge.runtime)


def build_writers(specs: Sequence[str]) -> list[Writer]:
    """One writer per spec; two with one name are an error (their candidates would collide)."""
    names = [writer_name(spec)[1] for spec in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SpecError(f"--models: two models are named {repeated[0]!r}; tell them apart with name=NAME")
    writers: list[Writer] = []
    try:
        for spec in specs:
            writers.append(build_writer(spec))
    except BaseException:
        close_writers(writers)
        raise
    return writers


def close_writers(writers: Sequence[Writer]) -> None:
    for writer in writers:
        writer.runtime.close()


# -- generating ----------------------------------------------------------------------------------


def writer_fingerprint(writer: Writer, decoding: Decoding) -> str:
    """What an answer's cache key holds besides the conversation: the model's identity and the decoding."""
    identity = {"model": writer.runtime.identity(), "decoding": asdict(decoding)}
    return json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)


def _decoded_answer(payload: dict[str, Any]) -> Generation:
    """A cached answer row as a :class:`Generation`; ValueError for a row that is not one (the memo names it)."""
    if not isinstance(payload.get("text"), str):
        raise ValueError("not an answer")
    usage = payload.get("usage")
    return Generation(text=payload["text"], usage=dict(usage) if isinstance(usage, dict) else {})


def _encoded_answer(generation: Generation) -> dict[str, Any]:
    return {"text": generation.text, "usage": generation.usage}


def answer_all(
    writer: Writer,
    conversations: Sequence[Chat],
    cache: Any,
    decoding: Decoding,
    bill: GenerationBill,
    advance: Callable[[int], None],
) -> list[str]:
    """The writer's answer to each conversation: cached, else generated (one runtime call) and cached at once.

    Through :meth:`~rankkit.judgments.memo.JudgmentMemo.fetch`, so each answer is leased in the cache
    as a judgment is: a second process generating the same answers waits for this one's instead of
    paying for them again (``docs/cache.md``, "Leases"). Answers another process paid for count as cached.
    """
    from rankkit.judgments.memo import JudgmentMemo, Origin

    def ask(indices: list[int]) -> Iterator[tuple[int, Generation]]:
        replies = writer.runtime.generate(
            [conversations[at] for at in indices],
            max_new_tokens=decoding.max_new_tokens,
            temperature=decoding.temperature,
            seed=decoding.seed,
        )
        for position, generation in replies:
            bill.charge(generation.usage)
            advance(1)
            yield position, generation

    # flush_seconds=0: each answer is committed as it arrives, so a killed run keeps what it paid for
    memo = JudgmentMemo(None, cache, flush_seconds=0.0)
    fingerprint = writer_fingerprint(writer, decoding)
    answers = memo.fetch(fingerprint, GENERATION_KIND, conversations, ask, _decoded_answer, _encoded_answer)
    memo.flush()
    reused = sum(origin is not Origin.JUDGE for _, origin in answers)
    bill.cached += reused
    advance(reused)
    return [generation.text for generation, _ in answers]


def writer_transcripts(
    writer: Writer,
    questions: Sequence[Question],
    cache: Any,
    decoding: Decoding,
    bill: GenerationBill,
    advance: Callable[[int], None],
) -> dict[str, Chat]:
    """Each question's conversation after the writer answered every turn (turn k sees its answers to turns < k)."""
    histories = {q.task_id: list(q.opening) for q in questions}
    for turn in range(1 + max((len(q.followups) for q in questions), default=-1)):
        asked = [q for q in questions if turn <= len(q.followups)]
        for question in asked if turn else ():
            histories[question.task_id].append({"role": "user", "content": question.followups[turn - 1]})
        answers = answer_all(writer, [histories[q.task_id] for q in asked], cache, decoding, bill, advance)
        for question, answer in zip(asked, answers, strict=True):
            histories[question.task_id].append({"role": "assistant", "content": answer})
    return histories


def candidate_record(writer: Writer, question: Question, history: Chat) -> dict[str, Any]:
    """The writer's candidate: the answer (single-turn) or the assistant-first continuation (multi-turn)."""
    continuation = history[len(question.opening) :]
    text: str | Chat = continuation[0]["content"] if len(continuation) == 1 else continuation
    record: dict[str, Any] = {"id": writer.name, "text": text, "system": writer.name}
    planted = getattr(writer.runtime, "planted_quality", None)
    if planted is not None:  # a simulated writer's planted quality, for the simulated judge
        turns = [history[: len(question.opening) + at] for at in range(0, len(continuation), 2)]
        record["human"] = {"quality": round(sum(planted(c) for c in turns) / len(turns), 6)}
    return record


def task_records(
    questions: Sequence[Question], writers: Sequence[Writer], transcripts: dict[str, dict[str, Chat]]
) -> list[dict[str, Any]]:
    """One task per question, one candidate per writer (``human`` scores only when every writer has them)."""
    tasks = []
    for question in questions:
        candidates = [candidate_record(w, question, transcripts[w.name][question.task_id]) for w in writers]
        if not all("human" in c for c in candidates):
            for candidate in candidates:
                candidate.pop("human", None)
        tasks.append(
            {"task_id": question.task_id, "prompt": question.prompt, **question.extra, "candidates": candidates}
        )
    return tasks


def write_tasks(records: Sequence[dict[str, Any]], out: str | Path) -> None:
    """Write the task file as JSONL, atomically (a killed run leaves the old file or none)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(partial, out)


def generate(
    questions: Sequence[Question],
    writers: Sequence[Writer],
    cache: Any,
    decoding: Decoding = Decoding(),
    progress: bool = False,
) -> tuple[list[dict[str, Any]], GenerationBill]:
    """Every writer's answers to every question, as task records, and what they cost.

    ``cache``: a :class:`~rankkit.judgments.cache.JudgmentCache` (or ``NullCache``); each answer is
    committed to it as it arrives, so a rerun of a killed run generates only what is missing.
    """
    from tqdm import tqdm

    total = len(writers) * sum(1 + len(q.followups) for q in questions)
    bill = GenerationBill()
    transcripts: dict[str, dict[str, Chat]] = {}
    with tqdm(total=total, desc="generate", unit="answer", disable=not progress, leave=False) as bar:
        for writer in writers:
            bar.set_postfix_str(writer.name)
            transcripts[writer.name] = writer_transcripts(writer, questions, cache, decoding, bill, bar.update)
    return task_records(questions, writers, transcripts), bill


def generate_file(
    questions_path: str | Path,
    model_specs: Sequence[str],
    out: str | Path,
    cache: Any,
    decoding: Decoding = Decoding(),
    progress: bool = False,
) -> GenerationBill:
    """Read the questions, build every model, generate and write the task file ``out``; the bill.

    The questions and the model specs are checked before any model is built or asked.
    """
    questions = read_questions(questions_path)
    for spec in model_specs:
        writer_name(spec)
    writers = build_writers(model_specs)
    try:
        records, bill = generate(questions, writers, cache, decoding, progress)
    finally:
        close_writers(writers)
    write_tasks(records, out)
    return bill
