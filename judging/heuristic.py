"""The glossary heuristic judge: an offline, deterministic stand-in for an LLM judge. Django-free.

It is NOT a language model and is labelled "glossary heuristic" wherever a run shows it. It answers
the judge prompts with the same JSON an LLM must give, so a study can run the whole judge path
(prompts, validation, aggregation, agreement) on its own data without a model — for tests, demos and
as a floor a real judge should beat. Its scores come from radlay's glossary agents, reached through
the generation backends' public interface (the "glossary" backend's Radiologist and Patient):

* the Radiologist agent lists the facts a simplification lost ("Missing …") or invented ("Added …");
  completeness loses a point per missing fact, hallucination per added fact, correctness per either;
* the Patient agent lists the words a layperson would not understand; simplicity (and the
  understanding / confidence of the lay judge) lose a step per unclear word;
* severity is guessed from a short list of finding words (``SEVERITY_CUES``), normal otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from generation.backends.base import BackendError, ChatBackend, Completion, GenerationParams
from generation.backends.registry import get_backend
from judging.instrument_items import ITEM_TASK

HEURISTIC_MODEL = "radlay-glossary-heuristic-v1"
HEURISTIC_LABEL = "glossary heuristic (not an LLM)"

# First match wins, most severe first. A sentence matching none, or only negated findings ("no
# fracture"), is "Healthy".
SEVERITY_CUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Critical",
        ("tension pneumothorax", "hemorrhage", "haemorrhage", "dissection", "free air", "herniation"),
    ),
    (
        "Serious",
        ("malignan", "metasta", "carcinoma", "tumor", "tumour", "mass", "pneumothorax", "embol", "fracture"),
    ),
    (
        "Moderate",
        ("effusion", "consolidation", "pneumonia", "obstruction", "stenosis", "lesion", "nodule", "edema"),
    ),
    ("Mild", ("cyst", "atelectasis", "degenerative", "mild", "small", "minimal", "calcif", "scarring")),
)
_NEGATION = re.compile(r"\b(no|without|negative for|resolved|free of)\b[^.;]*$", re.IGNORECASE)


def guess_severity(text: str) -> str:
    lowered = text.lower()
    for level, cues in SEVERITY_CUES:
        for cue in cues:
            for match in re.finditer(re.escape(cue), lowered):
                if not _NEGATION.search(lowered[: match.start()]):
                    return level
    return "Healthy"


def _points(feedback: str, prefix: str) -> int:
    return sum(1 for line in feedback.splitlines() if line.lstrip("- ").startswith(prefix))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _clamp(value: int, low: int = 1, high: int = 5) -> int:
    return max(low, min(high, value))


class GlossaryHeuristicJudge:
    """ChatBackend for judge tasks; reads the task and texts from the call's context."""

    name = "glossary"

    def __init__(self, model: str = HEURISTIC_MODEL):
        self.model = model or HEURISTIC_MODEL
        self._agents: ChatBackend = get_backend("glossary", model="radlay-glossary-v1")

    def _feedback(self, agent: str, **context: str) -> str:
        params = GenerationParams(temperature=0.0)
        return self._agents.complete([], agent=agent, params=params, context=context).text

    def _unclear(self, text: str) -> int:
        return _points(self._feedback("patient", simplification=text), "Unclear word")

    def answer(self, task: str, sentence: str, simplification: str | None) -> dict[str, Any]:
        if task == "radiologist_text":
            feedback = self._feedback("radiologist", sentence=sentence, simplification=simplification or "")
            missing, added = _points(feedback, "Missing"), _points(feedback, "Added")
            unclear = self._unclear(simplification or "")
            missing_concepts = _points(feedback, "Missing concept")
            return {
                "correctness": _clamp(5 - missing - added),
                "completeness": _clamp(5 - missing),
                "hallucination": _clamp(5 - added),
                "structure": _clamp(
                    5 - missing_concepts - (1 if len((simplification or "").split()) < 6 else 0)
                ),
                "simplicity": _clamp(5 - unclear),
                "justification": f"{HEURISTIC_LABEL}: {missing} missing, {added} added facts, "
                f"{unclear} unclear words",
            }
        if task == "radiologist_source":
            return {
                "severity": guess_severity(sentence),
                "original_simplicity": _clamp(5 - self._unclear(sentence)),
                "justification": HEURISTIC_LABEL,
            }
        if task in ("lay_original", "lay_assisted"):
            shown = simplification if task == "lay_assisted" else sentence
            unclear = self._unclear(shown or "")
            answer = {
                "understanding": ["Completely", "Most of it", "Some parts of it", "Some parts of it"][unclear]
                if unclear < 4
                else "Not at all",
                "confidence": "With high confidence"
                if unclear == 0
                else ("With low confidence" if unclear <= 2 else "Not at all"),
                "severity_guess": guess_severity(shown or ""),
            }
            if task == "lay_assisted":
                gained = self._unclear(sentence) - unclear
                answer["helpfulness"] = (
                    "I understand much better"
                    if gained >= 2
                    else "I understand slightly better"
                    if gained == 1
                    else "It did not help"
                    if gained == 0
                    else "It further confused me"
                )
            return answer
        raise BackendError(f"glossary heuristic judge: unknown task {task!r}", transient=False)

    def answer_items(self, context: dict[str, Any]) -> dict[str, Any]:
        """An instrument's items (judging/instrument_items.py), answered from the same cues: an
        ordinal item drops one point from the top of its scale per unclear word when its title or
        key speaks of simplicity, fluency or understanding, per missing fact for completeness or
        loss, per added fact for hallucination or misinterpretation, per missing or added fact
        otherwise (a higher code is taken as better); a count is the missing facts for loss or
        omission items, the added ones for misinterpretation or error items, both otherwise; a
        generated sentence matches a reference sentence when half their words are shared
        (Jaccard ≥ 0.5); a choice takes its first option."""
        sentence = context.get("sentence", "")
        text = context.get("simplification") or ""
        feedback = self._feedback("radiologist", sentence=sentence, simplification=text)
        missing, added = _points(feedback, "Missing"), _points(feedback, "Added")
        unclear = self._unclear(text) if text else self._unclear(sentence)
        answer: dict[str, Any] = {
            "justification": f"{HEURISTIC_LABEL}: {missing} missing, {added} added facts"
        }
        for item in context.get("items", []):
            cue = f"{item['key']} {item.get('title', '')}".lower()
            kind = item["kind"]
            if kind == "ordinal":
                if any(word in cue for word in ("simpl", "fluen", "understand", "read", "clear")):
                    penalty = unclear
                elif any(word in cue for word in ("complete", "loss", "omi")):
                    penalty = missing
                elif any(word in cue for word in ("halluc", "misinterpret")):
                    penalty = added
                else:
                    penalty = missing + added
                codes = sorted(item["codes"])
                answer[item["key"]] = codes[max(0, len(codes) - 1 - penalty)]
            elif kind == "count":
                if any(word in cue for word in ("loss", "miss", "omi")):
                    count = missing
                elif any(word in cue for word in ("misinterpret", "error", "halluc", "added")):
                    count = added
                else:
                    count = missing + added
                limit = item.get("max_count")
                answer[item["key"]] = count if limit is None else min(count, limit)
            elif kind == "sentence_matching":
                generated = [_words(s) for s in context.get("generated_sentences", [])]
                answer[item["key"]] = [
                    [j for j, words in enumerate(generated) if _jaccard(words, _words(reference)) >= 0.5]
                    for reference in context.get("reference_sentences", [])
                ]
            elif kind == "multiple_choice":
                answer[item["key"]] = item["options"][:1]
            else:
                answer[item["key"]] = item["options"][0]
        return answer

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        if not context or "task" not in context:
            raise BackendError(
                "glossary heuristic judge: needs the judge task in the context", transient=False
            )
        if context["task"] == ITEM_TASK:
            answer = self.answer_items(context)
        else:
            answer = self.answer(context["task"], context.get("sentence", ""), context.get("simplification"))
        text = json.dumps(answer, ensure_ascii=False)
        return Completion(
            text=text,
            prompt_tokens=sum(len(m.get("content", "").split()) for m in messages),
            completion_tokens=len(text.split()),
            cost_usd=0.0,
            model=self.model,
            raw={"backend": self.name, "heuristic": True, "task": context["task"]},
        )
