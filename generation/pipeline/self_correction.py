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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from generation.backends.base import ChatBackend, Completion, GenerationParams
from generation.pipeline.cot_parsing import parse_cot_answer
from generation.prompts.registry import PromptSet, load_prompts

PromptKind = Literal["plain", "cot"]
PROMPT_KINDS: tuple[str, ...] = ("plain", "cot")
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


@dataclass
class BaselineResult:
    """One Generator answer: the BS ("before self-correction") simplification."""

    sentence: str
    prompt_kind: str
    text: str
    raw_output: str
    transcript: list[dict[str, Any]]
    flag_reasons: list[str]
    prompt_tokens: int
    completion_tokens: int
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
class SelfCorrectionResult:
    sentence: str
    prompt_kind: str
    bs_text: str
    bs_raw: str
    sc_text: str
    sc_raw: str
    rounds: int
    refinements: int
    reached_cap: bool
    stopped_by: Literal["processor_no", "round_cap"]
    max_rounds: int
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


class _Agents:
    """Sends each agent's messages to its backend and records the exchange."""

    def __init__(
        self, backend: ChatBackend, agent_backends: Mapping[str, ChatBackend] | None, params: GenerationParams
    ) -> None:
        self.default = backend
        self.overrides = dict(agent_backends or {})
        self.params = params
        self.totals = _Totals()

    def call(
        self,
        agent: str,
        messages: list[dict[str, str]],
        *,
        round_: int,
        prompt: str,
        context: dict[str, Any],
        **extra: Any,
    ) -> Completion:
        backend = self.overrides.get(agent, self.default)
        completion = backend.complete(messages, agent=agent, params=self.params, context=context)
        self.record(agent, messages, completion, backend=backend, round_=round_, prompt=prompt, **extra)
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


def _check_kind(prompt_kind: str) -> None:
    if prompt_kind not in PROMPT_KINDS:
        raise ValueError(f"prompt_kind must be one of {PROMPT_KINDS}, not {prompt_kind!r}")


def _first_simplification(answer: str, prompt_kind: str, agents: _Agents) -> str:
    if prompt_kind == "cot":
        text, ok, reason = parse_cot_answer(answer)
        if not ok:
            agents.flag(f"CoT answer not parsed ({reason}); the whole answer is used")
        return text
    return answer.strip()


def _refined_simplification(answer: str, prompt_kind: str) -> str:
    if prompt_kind == "cot":
        parsed = parse_cot_answer(answer)
        if parsed.ok:
            return parsed.text
    return answer.strip()


def _record_generator_text(agents: _Agents, text: str) -> None:
    agents.totals.transcript[-1]["simplification"] = text
    if not text:
        agents.flag(f"empty simplification in round {agents.totals.transcript[-1]['round']}")


def generate_baseline(
    sentence: str,
    *,
    backend: ChatBackend,
    prompt_kind: PromptKind = "plain",
    prompts: PromptSet | None = None,
    params: GenerationParams | None = None,
) -> BaselineResult:
    """The Generator's first answer only (the Plain_BS or CoT_BS system)."""
    return generate_baselines(
        [sentence], backend=backend, prompt_kind=prompt_kind, prompts=prompts, params=params
    )[0]


def generate_baselines(
    sentences: Sequence[str],
    *,
    backend: ChatBackend,
    prompt_kind: PromptKind = "plain",
    prompts: PromptSet | None = None,
    params: GenerationParams | None = None,
) -> list[BaselineResult]:
    """BS simplifications of many sentences; one batched call when the backend has `complete_batch`
    (local GPU models), one call per sentence otherwise."""
    _check_kind(prompt_kind)
    prompts = prompts or load_prompts()
    params = params or GenerationParams()
    conversations = [
        [{"role": "user", "content": prompts.render(prompt_kind, sentence=s)}] for s in sentences
    ]
    contexts = [{"prompt": prompt_kind, "sentence": s, "round": 0} for s in sentences]
    batch = getattr(backend, "complete_batch", None)
    completions: list[Completion] | None = None
    if batch is not None and len(sentences) > 1:
        completions = batch(conversations, agent="generator", params=params, contexts=contexts)

    results = []
    for index, sentence in enumerate(sentences):
        agents = _Agents(backend, None, params)
        if completions is None:
            answer = agents.call(
                "generator", conversations[index], round_=0, prompt=prompt_kind, context=contexts[index]
            ).text
        else:
            agents.record(
                "generator",
                conversations[index],
                completions[index],
                backend=backend,
                round_=0,
                prompt=prompt_kind,
            )
            answer = completions[index].text
        text = _first_simplification(answer, prompt_kind, agents)
        _record_generator_text(agents, text)
        totals = agents.totals
        results.append(
            BaselineResult(
                sentence=sentence,
                prompt_kind=prompt_kind,
                text=text,
                raw_output=answer,
                transcript=totals.transcript,
                flag_reasons=totals.flag_reasons,
                prompt_tokens=totals.prompt_tokens,
                completion_tokens=totals.completion_tokens,
                cost_usd=totals.cost_usd,
                cost_known=totals.cost_known,
                calls=totals.calls,
                cached_calls=totals.cached_calls,
                prompt_version=prompts.version,
                prompt_digest=prompts.digest,
                backend=backend.name,
                model=backend.model,
                params=params.as_dict(),
            )
        )
    return results


def run_self_correction(
    sentence: str,
    *,
    backend: ChatBackend,
    prompt_kind: PromptKind = "plain",
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
    _check_kind(prompt_kind)
    if max_rounds < 0:
        raise ValueError("max_rounds must be >= 0")
    prompts = prompts or load_prompts()
    params = params or GenerationParams()
    agents = _Agents(backend, agent_backends, params)

    generator_memory = [{"role": "user", "content": prompts.render(prompt_kind, sentence=sentence)}]
    first = agents.call(
        "generator",
        list(generator_memory),
        round_=0,
        prompt=prompt_kind,
        context={"prompt": prompt_kind, "sentence": sentence, "round": 0},
    )
    generator_memory.append({"role": "assistant", "content": first.text})
    bs_text = _first_simplification(first.text, prompt_kind, agents)
    _record_generator_text(agents, bs_text)
    current, current_raw = bs_text, first.text

    stopped_by: Literal["processor_no", "round_cap"] = "round_cap"
    rounds = refinements = 0
    for round_ in range(1, max_rounds + 1):
        rounds = round_
        radiologist = agents.call(
            "radiologist",
            [
                {
                    "role": "user",
                    "content": prompts.render("radiologist", sentence=sentence, simplification=current),
                }
            ],
            round_=round_,
            prompt="radiologist",
            context={
                "prompt": "radiologist",
                "sentence": sentence,
                "simplification": current,
                "round": round_,
            },
        )
        patient = agents.call(
            "patient",
            [{"role": "user", "content": prompts.render("patient", simplification=current)}],
            round_=round_,
            prompt="patient",
            context={"prompt": "patient", "simplification": current, "round": round_},
        )
        processed: dict[str, str] = {}
        decisions: dict[str, str] = {}
        for feedback_of, feedback in (("radiologist", radiologist.text), ("patient", patient.text)):
            answer = agents.call(
                "processor",
                [{"role": "user", "content": prompts.render("processor", feedback=feedback)}],
                round_=round_,
                prompt="processor",
                feedback_of=feedback_of,
                context={
                    "prompt": "processor",
                    "feedback": feedback,
                    "feedback_of": feedback_of,
                    "round": round_,
                },
            ).text
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
        refined = agents.call(
            "generator",
            list(generator_memory),
            round_=round_,
            prompt="refine",
            context={
                "prompt": "refine",
                "sentence": sentence,
                "simplification": current,
                "radiologist_feedback": processed["radiologist"],
                "patient_feedback": processed["patient"],
                "round": round_,
            },
        )
        generator_memory.append({"role": "assistant", "content": refined.text})
        refinements += 1
        current, current_raw = _refined_simplification(refined.text, prompt_kind), refined.text
        _record_generator_text(agents, current)

    totals = agents.totals
    return SelfCorrectionResult(
        sentence=sentence,
        prompt_kind=prompt_kind,
        bs_text=bs_text,
        bs_raw=first.text,
        sc_text=current,
        sc_raw=current_raw,
        rounds=rounds,
        refinements=refinements,
        reached_cap=stopped_by == "round_cap",
        stopped_by=stopped_by,
        max_rounds=max_rounds,
        transcript=totals.transcript,
        flag_reasons=totals.flag_reasons,
        prompt_tokens=totals.prompt_tokens,
        completion_tokens=totals.completion_tokens,
        cost_usd=totals.cost_usd,
        cost_known=totals.cost_known,
        calls=totals.calls,
        cached_calls=totals.cached_calls,
        prompt_version=prompts.version,
        prompt_digest=prompts.digest,
        backend=backend.name,
        model=backend.model,
        params=params.as_dict(),
    )
