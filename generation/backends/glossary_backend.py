"""The offline, deterministic backend: radlay's lay glossary plays every agent. Django-free.

It answers the same calls as an LLM backend, but from the structured `context` the loop passes
(see generation/backends/base.py), through generation.glossary.agents:

- generator: {"sentence", "family": "plain"|"cot", "step": "initial"|"refine", "previous",
  "feedback": {"radiologist", "patient"}} -> simplify / simplify_cot / refine; with {"scgr": {...}}
  (generation/pipeline/scgr.py) it answers SCGR's refinement prompt with {"simplification": ...} JSON;
- radiologist: {"sentence", "simplification"}; patient: {"simplification"};
- processor: {"feedback", "source_agent"}.

The self-correction loop (generation/pipeline/self_correction.py) names the same fields its own way —
{"prompt": "plain"|"cot"|"refine", "simplification", "radiologist_feedback", "patient_feedback"},
{"prompt": "processor", "feedback_of"} — and both spellings are read (`normalize_context`).

Without a context (a caller that only has the rendered prompts), it reads the fields back from the
prompt text of generation/prompts/v1.yaml (seed 003's wording) and from the SCGR prompt: the last
user message names the step, the first user message carries the sentence, and the last assistant
message is the previous simplification. A prompt it cannot read raises a non-transient BackendError.

The answer does not depend on `params` (temperature, seed): the glossary is deterministic. Token
counts are word counts, and the cost is 0.
"""

from __future__ import annotations

import json
import re
from typing import Any

from generation.backends.base import AGENTS, BackendError, Completion, GenerationParams
from generation.glossary import agents

_PLAIN_RE = re.compile(r"^\s*Simplify the sentence:\s*(?P<sentence>.+?)\s*$", re.DOTALL)
_COT_RE = re.compile(
    r"^\s*Sentence:\s*(?P<sentence>.+?)\s*\n\s*Can you list all the complicated medical terms", re.DOTALL
)
_REFINE_RE = re.compile(
    r"Radiologist's feedback:\s*(?P<radiologist>.*?)\s*\n\s*Patient's feedback:\s*"
    r"(?P<patient>.*?)\s*\n\s*Can you improve your simplification",
    re.DOTALL,
)
_RADIOLOGIST_RE = re.compile(
    r"Radiology Sentence:\s*(?P<sentence>.*?)\s*\n\s*Simplification:\s*"
    r"(?P<simplification>.*?)\s*\n\s*Please provide your feedback",
    re.DOTALL,
)
_PATIENT_RE = re.compile(
    r"Simplification:\s*(?P<simplification>.*?)\s*\n\s*Please provide your feedback", re.DOTALL
)
_PROCESSOR_RE = re.compile(r"Feedback:\s*(?P<feedback>.*?)\s*\n\s*Are there any critical comments", re.DOTALL)
_SCGR_RE = re.compile(r'Original \(Fact\):\s*"(?P<original>.*?)"\s*\n', re.DOTALL)


def _word_count(text: str) -> int:
    return len(text.split())


def _user_messages(messages: list[dict[str, str]]) -> list[str]:
    return [m.get("content", "") for m in messages if m.get("role") == "user"]


def _sentence_from_first_prompt(messages: list[dict[str, str]]) -> tuple[str, str]:
    """(sentence, family) from the conversation's first Generator prompt."""
    for content in _user_messages(messages):
        for family, regex in (("plain", _PLAIN_RE), ("cot", _COT_RE)):
            found = regex.match(content)
            if found:
                return found.group("sentence").strip(), family
    raise BackendError(
        "glossary backend: no plain or CoT Generator prompt in the conversation", transient=False
    )


def context_from_prompt(messages: list[dict[str, str]], agent: str) -> dict[str, Any]:
    """Rebuild the loop's context dict from rendered prompts (the fallback when none was passed)."""
    users = _user_messages(messages)
    if not users:
        raise BackendError("glossary backend: the conversation has no user message", transient=False)
    last = users[-1]
    if agent == "generator":
        scgr = _SCGR_RE.search(last) or next((m for m in map(_SCGR_RE.search, users) if m), None)
        if scgr:
            return {"scgr": {"original": scgr.group("original")}}
        refine = _REFINE_RE.search(last)
        if refine:
            sentence, family = _sentence_from_first_prompt(messages)
            previous = next(
                (m.get("content", "") for m in reversed(messages) if m.get("role") == "assistant"), ""
            )
            return {
                "sentence": sentence,
                "family": family,
                "step": "refine",
                "previous": previous,
                "feedback": {"radiologist": refine.group("radiologist"), "patient": refine.group("patient")},
            }
        for family, regex in (("plain", _PLAIN_RE), ("cot", _COT_RE)):
            found = regex.match(last)
            if found:
                return {
                    "sentence": found.group("sentence").strip(),
                    "family": family,
                    "step": "initial",
                    "previous": None,
                }
    elif agent == "radiologist":
        found = _RADIOLOGIST_RE.search(last)
        if found:
            return {"sentence": found.group("sentence"), "simplification": found.group("simplification")}
    elif agent == "patient":
        found = _PATIENT_RE.search(last)
        if found:
            return {"simplification": found.group("simplification")}
    elif agent == "processor":
        found = _PROCESSOR_RE.search(last)
        if found:
            return {"feedback": found.group("feedback"), "source_agent": None}
    raise BackendError(f"glossary backend: cannot read the {agent} prompt", transient=False)


def normalize_context(agent: str, ctx: dict[str, Any]) -> dict[str, Any]:
    """One spelling of the context fields, whichever of the two documented shapes the caller used."""
    out = dict(ctx)
    prompt = ctx.get("prompt")
    if agent == "generator" and "scgr" not in ctx:
        out["step"] = ctx.get("step") or ("refine" if prompt == "refine" else "initial")
        out["family"] = ctx.get("family") or (prompt if prompt in ("plain", "cot") else "plain")
        if out["step"] == "refine":
            out["previous"] = ctx.get("previous") or ctx.get("simplification")
            feedback = ctx.get("feedback")
            if not isinstance(feedback, dict):
                feedback = {
                    "radiologist": ctx.get("radiologist_feedback", ""),
                    "patient": ctx.get("patient_feedback", ""),
                }
            out["feedback"] = feedback
    if agent == "processor":
        out["source_agent"] = ctx.get("source_agent") or ctx.get("feedback_of")
    return out


class GlossaryBackend:
    """ChatBackend played by radlay's glossary agents; deterministic, offline, free."""

    name = "glossary"

    def __init__(self, model: str = "radlay-glossary-v1"):
        self.model = model

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        if agent not in AGENTS:
            raise BackendError(f"glossary backend: unknown agent {agent!r}", transient=False)
        source = "context"
        if not context:
            context, source = context_from_prompt(messages, agent), "prompt"
        text = self._answer(agent, normalize_context(agent, context))
        prompt_words = sum(_word_count(m.get("content", "")) for m in messages)
        return Completion(
            text=text,
            prompt_tokens=prompt_words,
            completion_tokens=_word_count(text),
            cost_usd=0.0,
            model=self.model,
            raw={"backend": self.name, "agent": agent, "context_from": source},
        )

    def _answer(self, agent: str, ctx: dict[str, Any]) -> str:
        try:
            if agent == "generator":
                if "scgr" in ctx:
                    original = ctx["scgr"]["original"]
                    return json.dumps({"simplification": agents.scgr_answer(original)}, ensure_ascii=False)
                if ctx.get("step") == "refine":
                    feedback = ctx.get("feedback") or {}
                    return agents.refine(
                        ctx["sentence"],
                        ctx.get("previous") or ctx["sentence"],
                        radiologist_feedback=feedback.get("radiologist", ""),
                        patient_feedback=feedback.get("patient", ""),
                    )
                if ctx.get("family") == "cot":
                    return agents.simplify_cot(ctx["sentence"])
                return agents.simplify(ctx["sentence"])
            if agent == "radiologist":
                return agents.radiologist_feedback(ctx["sentence"], ctx["simplification"])
            if agent == "patient":
                return agents.patient_feedback(ctx["simplification"])
            return agents.process_feedback(ctx["feedback"], source_agent=ctx.get("source_agent"))
        except KeyError as missing:
            raise BackendError(
                f"glossary backend: the {agent} context lacks {missing}", transient=False
            ) from None
