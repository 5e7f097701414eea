"""The self-correction loop of seed 003 (section 4.2, Figure 2, appendix A.3-A.4). Django-free.

Generator (keeps its conversation) → Radiologist and Patient give feedback on the current
simplification → Processor decides → Generator refines, until Processor finds nothing to improve.

Choices the paper leaves open, made here:

* **Processor runs once per feedback.** Its prompt has one `Feedback: <FEEDBACK>` slot while the
  refine prompt has two `<PROCESSED FEEDBACK>` slots, one labelled "Radiologist's feedback" and one
  "Patient's feedback": each feedback is processed on its own (two Processor calls per round,
  each in a fresh conversation). The loop stops when both answers start with "No"; if only one
  does, that "No…" answer is what the refine prompt carries for that agent (the Processor's own
  words, nothing invented).
* **"Starts with No"** is read as the word No (or None) at the start, after any markdown or
  quotes — "No.", "**No**", "No, the feedback is positive" — not the letters, so "Notably, …" does
  not stop the loop. An answer starting with "Yes" goes on with the extracted points (the text after
  "Yes"); an answer starting with neither goes on with the whole answer and flags the result.
* **A round** is: Radiologist + Patient feedback, the Processor's two decisions, and (unless both
  are "No") one refinement. `rounds` counts rounds run; the cap (default 5) bounds them. When the
  last allowed round ends with a refinement, the loop stops with stopped_by="round_cap" and that
  refined simplification, unassessed, is the SC one.
* **Every agent prompt is one user message** (Figures 6-7 are a single initial prompt with the
  persona, the criteria, the sentence and the request). Radiologist, Patient and Processor start a
  fresh conversation each call; only the Generator remembers.
* **The agents see the extracted simplification**, never the Generator's chain of thought; the
  Generator's own memory keeps its raw answers.
* **CoT answers:** the first answer must have the CoT shape (else the whole answer is used and the
  result is flagged); a refined answer is parsed when it has the CoT shape and taken whole
  otherwise, since the refine prompt no longer asks for a term list.

**Many sentences at once** (`run_self_correction_batch`, for local GPU models): on a
continuous-batching engine each sentence's next request goes in as soon as its previous answers are
back (generation.pipeline.continuous); otherwise the same protocol runs for every sentence in
lockstep, each step one batched call over the sentences still in the loop;
a sentence's calls, transcript and result are those run_self_correction makes for it alone.

Each backend call also receives `agent` and a `context` dict for backends that play the agents
without reading the messages (the glossary backend):

* generator, first call: {"prompt": "plain"|"cot", "sentence", "round": 0}
* generator, refine:     {"prompt": "refine", "sentence", "simplification" (current),
                          "radiologist_feedback", "patient_feedback" (processed), "round"}
* radiologist:           {"prompt": "radiologist", "sentence", "simplification", "round"}
* patient:               {"prompt": "patient", "simplification", "round"}  (no sentence: a layperson)
* processor:             {"prompt": "processor", "feedback", "feedback_of": "radiologist"|"patient", "round"}
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from generation.backends.base import BackendError, ChatBackend, Completion, GenerationParams
from generation.backends.streaming import streams
from generation.pipeline.cot_parsing import parse_cot_answer
from generation.prompts.registry import PromptSet, load_prompts

Family = Literal["plain", "cot"]
FAMILIES: tuple[str, ...] = ("plain", "cot")
DEFAULT_MAX_ROUNDS = 5

_NO = re.compile(r"^[\W_]*(?:no|none)\b", re.IGNORECASE)
_YES = re.compile(r"^[\W_]*yes\b(?:\*\*|__)?[ \t]*[,.:;!]?(?:\*\*|__)?\s*", re.IGNORECASE)


def processor_decision(answer: str) -> Literal["no", "yes", "unclear"]:
    if _NO.match(answer):
        return "no"
    if _YES.match(answer):
        return "yes"
    return "unclear"


def processed_feedback(answer: str) -> str:
    """What the refine prompt carries for one Processor answer: the points after "Yes", else the answer."""
    text = answer.strip()
    match = _YES.match(text)
    if match and text[match.end() :].strip():
        rest = text[match.end() :].strip()
        return rest[0].upper() + rest[1:]
    return text


@dataclass
class _Totals:
    transcript: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    calls: int = 0
    cached_calls: int = 0
    flag_reasons: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class _RunRecord:
    """What every result records of its calls (one sentence's _Totals) and of its setup."""

    transcript: list[dict[str, Any]]
    flag_reasons: list[str]
    prompt_tokens: int
    completion_tokens: int
    # Spent in this run: cached calls cost nothing. cost_known is False when any call was unpriced.
    cost_usd: float
    cost_known: bool
    calls: int
    cached_calls: int
    prompt_version: str
    prompt_digest: str
    backend: str
    model: str
    params: dict[str, Any]

    @property
    def flagged(self) -> bool:
        return bool(self.flag_reasons)

    @property
    def flag_reason(self) -> str:
        return "; ".join(self.flag_reasons)


@dataclass
class BaselineResult(_RunRecord):
    """One Generator answer: the BS ("before self-correction") simplification."""

    sentence: str
    family: str
    text: str
    raw_output: str


@dataclass
class SelfCorrectionResult(_RunRecord):
    sentence: str
    family: str
    bs_text: str
    bs_raw: str
    sc_text: str
    sc_raw: str
    rounds: int
    refinements: int
    reached_cap: bool
    stopped_by: Literal["processor_no", "round_cap"]
    max_rounds: int


@dataclass
class _Call:
    """One backend call the loop asks for: an agent's messages and where the call sits in its job."""

    agent: str
    messages: list[dict[str, str]]
    prompt: str
    round: int
    context: dict[str, Any]
    # Recorded in the transcript next to the call (the Processor's "feedback_of").
    extra: dict[str, Any] = field(default_factory=dict)


def _complete_calls(
    backend: ChatBackend, calls: Sequence[_Call], params: GenerationParams
) -> list[Completion]:
    """Answers to calls of one agent, in order: one `complete_batch` call when the backend has it
    and there are several calls, else one `complete` per call."""
    if not calls:
        return []
    agent = calls[0].agent
    batch = getattr(backend, "complete_batch", None)
    if batch is not None and len(calls) > 1:
        completions = list(
            batch(
                [call.messages for call in calls],
                agent=agent,
                params=params,
                contexts=[call.context for call in calls],
            )
        )
        if len(completions) != len(calls):
            raise BackendError(
                f"{backend.name} returned {len(completions)} answers for {len(calls)} {agent} calls"
            )
        return completions
    return [
        backend.complete(call.messages, agent=agent, params=params, context=call.context) for call in calls
    ]


class _Agents:
    """Which backend plays each agent, and the record of one sentence's exchanges."""

    def __init__(
        self, backend: ChatBackend, agent_backends: Mapping[str, ChatBackend] | None, params: GenerationParams
    ) -> None:
        self.default = backend
        self.overrides = dict(agent_backends or {})
        self.params = params
        self.totals = _Totals()

    def backend_for(self, agent: str) -> ChatBackend:
        return self.overrides.get(agent, self.default)

    def take(self, call: _Call, completion: Completion) -> Completion:
        """Record the answer to `call` (in call order: the transcript and the flags follow it)."""
        self.record(
            call.agent,
            call.messages,
            completion,
            backend=self.backend_for(call.agent),
            round_=call.round,
            prompt=call.prompt,
            **call.extra,
        )
        return completion

    def record(
        self,
        agent: str,
        messages: list[dict[str, str]],
        completion: Completion,
        *,
        backend: ChatBackend,
        round_: int,
        prompt: str,
        **extra: Any,
    ) -> None:
        totals = self.totals
        totals.transcript.append(
            {
                "round": round_,
                "agent": agent,
                "role": "user",
                "prompt": prompt,
                "content": messages[-1]["content"],
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "cached": False,
                **extra,
            }
        )
        totals.transcript.append(
            {
                "round": round_,
                "agent": agent,
                "role": "assistant",
                "prompt": prompt,
                "content": completion.text,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "cached": completion.cached,
                "cost_usd": completion.cost_usd,
                "backend": backend.name,
                "model": completion.model or backend.model,
                **extra,
            }
        )
        totals.calls += 1
        totals.cached_calls += int(completion.cached)
        totals.prompt_tokens += completion.prompt_tokens
        totals.completion_tokens += completion.completion_tokens
        totals.cost_usd += completion.cost_usd
        totals.cost_known = totals.cost_known and completion.cost_known
        if completion.raw.get("finish_reason") == "length":
            totals.flag_reasons.append(f"{agent} answer in round {round_} was cut off at max_tokens")

    def flag(self, reason: str) -> None:
        self.totals.flag_reasons.append(reason)

    def run_record(self, prompts: PromptSet) -> dict[str, Any]:
        """The _RunRecord fields of this sentence's result."""
        totals = self.totals
        return {
            "transcript": totals.transcript,
            "flag_reasons": totals.flag_reasons,
            "prompt_tokens": totals.prompt_tokens,
            "completion_tokens": totals.completion_tokens,
            "cost_usd": totals.cost_usd,
            "cost_known": totals.cost_known,
            "calls": totals.calls,
            "cached_calls": totals.cached_calls,
            "prompt_version": prompts.version,
            "prompt_digest": prompts.digest,
            "backend": self.default.name,
            "model": self.default.model,
            "params": self.params.as_dict(),
        }


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")


def _first_simplification(answer: str, family: str, agents: _Agents) -> str:
    if family == "cot":
        text, ok, reason = parse_cot_answer(answer)
        if not ok:
            agents.flag(f"CoT answer not parsed ({reason}); the whole answer is used")
        return text
    return answer.strip()


def _refined_simplification(answer: str, family: str) -> str:
    if family == "cot":
        parsed = parse_cot_answer(answer)
        if parsed.ok:
            return parsed.text
    return answer.strip()


def _record_generator_text(agents: _Agents, text: str) -> None:
    agents.totals.transcript[-1]["simplification"] = text
    if not text:
        agents.flag(f"empty simplification in round {agents.totals.transcript[-1]['round']}")


def _first_call(sentence: str, family: str, prompts: PromptSet) -> _Call:
    return _Call(
        "generator",
        [{"role": "user", "content": prompts.render(family, sentence=sentence)}],
        family,
        0,
        {"prompt": family, "sentence": sentence, "round": 0},
    )


def generate_baseline(
    sentence: str,
    *,
    backend: ChatBackend,
    family: Family = "plain",
    prompts: PromptSet | None = None,
    params: GenerationParams | None = None,
) -> BaselineResult:
    """The Generator's first answer only (the Plain_BS or CoT_BS system)."""
    return generate_baselines([sentence], backend=backend, family=family, prompts=prompts, params=params)[0]


def generate_baselines(
    sentences: Sequence[str],
    *,
    backend: ChatBackend,
    family: Family = "plain",
    prompts: PromptSet | None = None,
    params: GenerationParams | None = None,
) -> list[BaselineResult]:
    """BS simplifications of many sentences; one batched call when the backend has `complete_batch`
    (local GPU models), one call per sentence otherwise."""
    _check_family(family)
    prompts = prompts or load_prompts()
    params = params or GenerationParams()
    calls = [_first_call(sentence, family, prompts) for sentence in sentences]
    completions = _complete_calls(backend, calls, params)

    results = []
    for sentence, call, completion in zip(sentences, calls, completions, strict=True):
        agents = _Agents(backend, None, params)
        answer = agents.take(call, completion).text
        text = _first_simplification(answer, family, agents)
        _record_generator_text(agents, text)
        results.append(
            BaselineResult(
                sentence=sentence,
                family=family,
                text=text,
                raw_output=answer,
                **agents.run_record(prompts),
            )
        )
    return results


# The loop for one sentence as a coroutine: it yields the calls of its next step (all of one agent)
# and is sent their answers, in the same order. Driving it call by call is run_self_correction;
# driving many sentences' coroutines step by step, each step one batch, is run_self_correction_batch.
# Both run the very same protocol code, so a sentence gets the same calls, transcript and result.
_Loop = Generator[list[_Call], list[Completion], SelfCorrectionResult]


def _self_correction_loop(
    sentence: str,
    *,
    agents: _Agents,
    family: str,
    prompts: PromptSet,
    max_rounds: int,
) -> _Loop:
    first_call = _first_call(sentence, family, prompts)
    generator_memory = list(first_call.messages)
    (first,) = yield [first_call]
    agents.take(first_call, first)
    generator_memory.append({"role": "assistant", "content": first.text})
    bs_text = _first_simplification(first.text, family, agents)
    _record_generator_text(agents, bs_text)
    current, current_raw = bs_text, first.text

    stopped_by: Literal["processor_no", "round_cap"] = "round_cap"
    rounds = refinements = 0
    for round_ in range(1, max_rounds + 1):
        rounds = round_
        radiologist_call = _Call(
            "radiologist",
            [
                {
                    "role": "user",
                    "content": prompts.render("radiologist", sentence=sentence, simplification=current),
                }
            ],
            "radiologist",
            round_,
            {"prompt": "radiologist", "sentence": sentence, "simplification": current, "round": round_},
        )
        (radiologist,) = yield [radiologist_call]
        agents.take(radiologist_call, radiologist)
        patient_call = _Call(
            "patient",
            [{"role": "user", "content": prompts.render("patient", simplification=current)}],
            "patient",
            round_,
            {"prompt": "patient", "simplification": current, "round": round_},
        )
        (patient,) = yield [patient_call]
        agents.take(patient_call, patient)

        # Both Processor calls in one step (one batch); each answer is recorded and read before the
        # next, as when they are made one after the other.
        processor_calls = [
            _Call(
                "processor",
                [{"role": "user", "content": prompts.render("processor", feedback=feedback)}],
                "processor",
                round_,
                {"prompt": "processor", "feedback": feedback, "feedback_of": feedback_of, "round": round_},
                {"feedback_of": feedback_of},
            )
            for feedback_of, feedback in (("radiologist", radiologist.text), ("patient", patient.text))
        ]
        answers = yield processor_calls
        processed: dict[str, str] = {}
        decisions: dict[str, str] = {}
        for call, completion in zip(processor_calls, answers, strict=True):
            feedback_of = call.extra["feedback_of"]
            answer = agents.take(call, completion).text
            decisions[feedback_of] = processor_decision(answer)
            processed[feedback_of] = processed_feedback(answer)
            if decisions[feedback_of] == "unclear":
                agents.flag(
                    f"processor answer on the {feedback_of}'s feedback in round {round_} "
                    "starts with neither Yes nor No; treated as Yes"
                )
        if all(decision == "no" for decision in decisions.values()):
            stopped_by = "processor_no"
            break

        refine = prompts.render(
            "refine", radiologist_feedback=processed["radiologist"], patient_feedback=processed["patient"]
        )
        generator_memory.append({"role": "user", "content": refine})
        refine_call = _Call(
            "generator",
            list(generator_memory),
            "refine",
            round_,
            {
                "prompt": "refine",
                "sentence": sentence,
                "simplification": current,
                "radiologist_feedback": processed["radiologist"],
                "patient_feedback": processed["patient"],
                "round": round_,
            },
        )
        (refined,) = yield [refine_call]
        agents.take(refine_call, refined)
        generator_memory.append({"role": "assistant", "content": refined.text})
        refinements += 1
        current, current_raw = _refined_simplification(refined.text, family), refined.text
        _record_generator_text(agents, current)

    return SelfCorrectionResult(
        sentence=sentence,
        family=family,
        bs_text=bs_text,
        bs_raw=first.text,
        sc_text=current,
        sc_raw=current_raw,
        rounds=rounds,
        refinements=refinements,
        reached_cap=stopped_by == "round_cap",
        stopped_by=stopped_by,
        max_rounds=max_rounds,
        **agents.run_record(prompts),
    )


def _check_loop_arguments(family: str, max_rounds: int) -> None:
    _check_family(family)
    if max_rounds < 0:
        raise ValueError("max_rounds must be >= 0")


def run_self_correction(
    sentence: str,
    *,
    backend: ChatBackend,
    family: Family = "plain",
    prompts: PromptSet | None = None,
    params: GenerationParams | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    agent_backends: Mapping[str, ChatBackend] | None = None,
) -> SelfCorrectionResult:
    """Generate the BS simplification and self-correct it (Plain_SC / CoT_SC).

    `agent_backends` optionally gives some agents another backend than `backend` (the paper used
    one model for all four). BackendError from any call propagates; with a CachedBackend a retried
    job replays the calls that had already succeeded without paying for them again.
    """
    _check_loop_arguments(family, max_rounds)
    prompts = prompts or load_prompts()
    params = params or GenerationParams()
    agents = _Agents(backend, agent_backends, params)
    loop = _self_correction_loop(
        sentence,
        agents=agents,
        family=family,
        prompts=prompts,
        max_rounds=max_rounds,
    )
    calls = next(loop)
    while True:
        # One call at a time, in the protocol's order.
        answers = [
            agents.backend_for(call.agent).complete(
                call.messages, agent=call.agent, params=params, context=call.context
            )
            for call in calls
        ]
        try:
            calls = loop.send(answers)
        except StopIteration as done:
            result: SelfCorrectionResult = done.value
            return result


def run_self_correction_batch(
    sentences: Sequence[str],
    *,
    backend: ChatBackend,
    family: Family = "plain",
    prompts: PromptSet | None = None,
    params: GenerationParams | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    agent_backends: Mapping[str, ChatBackend] | None = None,
) -> list[SelfCorrectionResult]:
    """run_self_correction for many sentences, one result per sentence in their order.

    A backend with submit/collect (vLLM, the transformers backend on a decoder-only model) gets
    every sentence's requests as soon as they exist (generation.pipeline.continuous); any other
    backend runs the sentences in lockstep, as follows.

    Every step of the protocol is one batch over the sentences still in the loop: the Generator's
    first answers, then per round the Radiologist's prompts, the Patient's, the Processor's (two per
    sentence), the refinements. A sentence whose Processor answers are both "No" leaves the loop.
    A backend with `complete_batch` (a local GPU model) gets each step as one call (a step of a
    single call as a plain `complete`); another gets one `complete` per call. Each call carries the
    same messages, agent, params and context as in run_self_correction, so with a deterministic
    backend each result is the one run_self_correction gives, and a CachedBackend shares its
    entries between the two.

    A BackendError from any batch propagates (for every sentence: they share the batch).
    """
    _check_loop_arguments(family, max_rounds)
    prompts = prompts or load_prompts()
    params = params or GenerationParams()
    agents = [_Agents(backend, agent_backends, params) for _ in sentences]
    loops = [
        _self_correction_loop(
            sentence,
            agents=item,
            family=family,
            prompts=prompts,
            max_rounds=max_rounds,
        )
        for sentence, item in zip(sentences, agents, strict=True)
    ]
    if streams(backend):
        # A continuous-batching engine: no lockstep (generation.pipeline.continuous).
        from generation.pipeline.continuous import drive_loops

        return drive_loops(loops, agents, params)
    results: list[SelfCorrectionResult | None] = [None] * len(loops)
    waiting = {index: next(loop) for index, loop in enumerate(loops)}
    while waiting:
        # The sentences still in the loop are all at the same step, so this is one group; grouping
        # by agent only keeps each batch to one agent (complete_batch takes one) whatever happens.
        by_agent: dict[str, list[int]] = {}
        for index, calls in waiting.items():
            by_agent.setdefault(calls[0].agent, []).append(index)
        next_waiting: dict[int, list[_Call]] = {}
        for agent, indices in by_agent.items():
            flat = [call for index in indices for call in waiting[index]]
            answers = _complete_calls(agents[indices[0]].backend_for(agent), flat, params)
            offset = 0
            for index in indices:
                size = len(waiting[index])
                try:
                    next_waiting[index] = loops[index].send(answers[offset : offset + size])
                except StopIteration as done:
                    results[index] = done.value
                offset += size
        waiting = next_waiting
    return [result for result in results if result is not None]
