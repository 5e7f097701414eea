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
* severity is guessed from a short list of finding words (``SEVERITY_CUES``), normal otherwise;
* a later sample of a K-sample run at a temperature > 0 moves scored answers by one level at a
  seeded rate (``sample_variation``), so that a K-sample run has a confidence to calibrate;
* an error-span item is answered by the rules of ``error_spans``: jargon the glossary
  knows left without a lay explanation, and the facts lexicon.facts.check_facts finds lost, changed
  or added against the source, each with a category and a severity by rule.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from generation.backends.base import BackendError, ChatBackend, Completion, GenerationParams
from generation.backends.registry import get_backend
from judging.instrument import TASKS
from judging.instrument_items import ITEM_TASK
from lexicon.facts import Violation, check_facts, rendering_present
from lexicon.glossary import Glossary, load_glossary

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


# --- error spans -------------------------------------------------------------------------------------
# The clinical typology's keys (instruments/presets/clinical_error_spans.yaml) and its severities by
# rank: 0 minor, 1 could mislead, 2 could harm (an item with other severities takes them by rank).
JARGON, OMITTED, WRONG = "unexplained_jargon", "omitted_finding", "wrong_finding_or_location"
REASSURANCE, HALLUCINATED = "wrong_severity_or_false_reassurance", "hallucinated_content"
MINOR, MISLEAD, HARM = 0, 1, 2
_WORD = re.compile(r"[\w'’]+(?:-[\w'’]+)*")
_GLOSSED_AFTER = re.compile(r"\s*\(")


def _explained(entry, text: str, start: int, end: int) -> bool:
    """A jargon term is explained when the text also says it in lay words (any accepted rendering),
    glosses it in parentheses right after, or is itself inside a parenthesised gloss."""
    if rendering_present(entry, text) or _GLOSSED_AFTER.match(text, end):
        return True
    return text.rfind("(", 0, start) > text.rfind(")", 0, start)


def _place(source: str, wording: str, text: str, *, at: int | None = None) -> tuple[int, int] | None:
    """Where a fact the text lost should have been said: the content word (four letters or more) of
    `text` at the same relative position as `wording` (or offset `at`) in `source` — a
    simplification keeps roughly the source's order."""
    words = [m.span() for m in _WORD.finditer(text) if len(m.group()) >= 4] or [
        m.span() for m in _WORD.finditer(text)
    ]
    if not words:
        return None
    if at is None:
        at = source.lower().find(wording.lower())
    share = max(at, 0) / max(len(source), 1)
    target = share * len(text)
    return next((w for w in words if w[1] > target), words[-1])


def _found(text: str, wording: str, taken: set[tuple[int, int]]) -> tuple[int, int] | None:
    for match in re.finditer(re.escape(wording), text, re.IGNORECASE):
        if match.span() not in taken:
            return match.span()
    return None


def _lost_rule(violation: Violation) -> tuple[str, int]:
    """(category, severity rank) of a fact the text lost."""
    if violation.kind == "concept":
        serious = guess_severity(violation.expected) in ("Critical", "Serious")
        return OMITTED, HARM if serious else MISLEAD
    if violation.kind == "negation":
        return WRONG, MISLEAD  # a finding the original rules out reads as present
    if violation.kind == "hedge":
        return REASSURANCE, MISLEAD  # an uncertain finding reads as certain
    if violation.kind == "side":
        return OMITTED, MISLEAD
    return OMITTED, MINOR  # a size, number or amount


def _added_rule(violation: Violation) -> tuple[str, int]:
    """(category, severity rank) of a fact the text added."""
    if violation.kind == "negation":
        return REASSURANCE, HARM  # the text rules out what the original does not
    if violation.replaces:
        return WRONG, HARM if violation.kind == "side" else MISLEAD  # a flipped side, a changed size
    return HALLUCINATED, MISLEAD


def error_spans(
    sentence: str,
    text: str,
    *,
    categories: list[str],
    severities: list[str],
    glossary: Glossary | None = None,
) -> list[dict[str, Any]]:
    """The glossary judge's errors in `text` (a simplification of `sentence`), as offsets:

    * unexplained_jargon (minor): a glossary term whose plain rendering differs from it (jargon)
      standing in the text, not said in lay words anywhere in the text, not glossed in parentheses;
    * omitted_finding: a concept of the source the text lost (could harm when the concept names a
      serious or critical finding by ``SEVERITY_CUES``, could mislead otherwise), a lost side (could
      mislead), a lost size, number or amount (minor), placed on the word at the same relative
      position as in the source ("mark the place where it should have been said");
    * wrong_finding_or_location: a side, size or number standing in for the source's (a flipped side
      could harm, a changed size or number could mislead), at its wording; a lost negation (could
      mislead: the finding reads as present), placed as an omission;
    * wrong_severity_or_false_reassurance: a negation the source does not have (could harm), at its
      wording; a lost hedge (could mislead: an uncertain finding reads as certain), placed;
    * hallucinated_content (could mislead): a side, size or number the source does not have.

    Only the categories the item offers are given; severities map by rank (mildest first)."""
    glossary = glossary or load_glossary()
    found: list[tuple[int, int, str, int]] = []
    for match in glossary.find_terms(text):
        entry = glossary.get(match.term)
        if entry is not None and match.is_jargon and not _explained(entry, text, match.start, match.end):
            found.append((match.start, match.end, JARGON, MINOR))
    replaced = set()
    violations = check_facts(sentence, text, glossary=glossary)
    for violation in violations:
        if violation.added and violation.replaces:
            replaced.add((violation.kind, violation.replaces))
    terms = {m.term: m.start for m in glossary.find_terms(sentence)}
    taken: set[tuple[int, int]] = set()
    for violation in violations:
        if violation.added:
            category, rank = _added_rule(violation)
            where = _found(text, violation.expected, taken)
        elif (violation.kind, violation.expected) in replaced:
            continue  # the added value standing in for it is the error, marked at its wording
        else:
            category, rank = _lost_rule(violation)
            where = _place(sentence, violation.expected, text, at=terms.get(violation.expected))
        if where is not None:
            taken.add(where)
            found.append((where[0], where[1], category, rank))
    if not severities:
        return []
    top = len(severities) - 1
    spans = {
        (start, end, category, severities[min(top, round(rank * top / HARM))])
        for start, end, category, rank in found
        if category in categories
    }
    return [
        {"start": start, "end": end, "quote": text[start:end], "category": category, "severity": severity}
        for start, end, category, severity in sorted(spans)
    ]


# --- sampling (judge calibration) ------------------------------------------------------------------
# A K-sample run of an LLM judge at a temperature > 0 gives answers that differ between samples;
# the calibration of its vote-share confidence (measures.stats.calibration) needs that spread. The
# heuristic's first sample (sample_index 0) is its rule-based answer; each later sample at a
# temperature > 0 moves each scored answer one level up or down with probability
# min(0.5, temperature / 4) (0.2 at the prompts' 0.8), seeded by the question, the sample and the
# run's seed: a run and its rerun agree, and a K = 1 run is exactly the rule-based judge.
SAMPLE_SHIFT_PER_TEMPERATURE = 0.25


def _levels(task: str, name: str) -> list[Any] | None:
    for answer_field in TASKS.get(task, ()):
        if answer_field.name == name:
            if answer_field.categorical:
                return list(answer_field.scale.names)
            low, high = answer_field.bounds
            return list(range(low, high + 1))
    return None


def sample_variation(
    answer: dict[str, Any], context: dict[str, Any], params: GenerationParams
) -> dict[str, Any]:
    """`answer` as a later sample at `params.temperature` gives it (see above)."""
    if params.sample_index <= 0 or params.temperature <= 0:
        return answer
    share = min(0.5, params.temperature * SAMPLE_SHIFT_PER_TEMPERATURE)
    key = json.dumps(
        [
            context.get("task"),
            context.get("sentence"),
            context.get("simplification"),
            context.get("reference"),
        ],
        ensure_ascii=False,
    )
    digest = hashlib.sha256(f"{key}|{params.sample_index}|{params.seed}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    ordinal = {i["key"]: sorted(i["codes"]) for i in context.get("items", []) if i.get("kind") == "ordinal"}
    varied = dict(answer)
    for name, value in answer.items():
        levels = ordinal.get(name) if context.get("task") == ITEM_TASK else _levels(context["task"], name)
        if not levels or value not in levels or len(levels) < 2:
            continue
        if rng.random() >= share:
            continue
        at = levels.index(value)
        step = rng.choice((-1, 1)) if 0 < at < len(levels) - 1 else (1 if at == 0 else -1)
        varied[name] = levels[at + step]
    return varied


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

    def _penalty(self, sentence: str, text: str) -> int:
        feedback = self._feedback("radiologist", sentence=sentence, simplification=text)
        return _points(feedback, "Missing") + _points(feedback, "Added") + self._unclear(text)

    def _preference(self, sentence: str, first: str, second: str, item: dict[str, Any]) -> str:
        """A pairwise item: the text with fewer missing or added facts and unclear words wins
        ("left" is text A, shown first); equal penalties are a tie. The rule reads both texts alike,
        so the heuristic has no position bias of its own: a floor for an LLM judge's flip share."""
        a, b = self._penalty(sentence, first), self._penalty(sentence, second)
        choice = "left" if a < b else "right" if b < a else "tie"
        return choice if choice in item["options"] else item["options"][0]

    def answer_items(self, context: dict[str, Any]) -> dict[str, Any]:
        """An instrument's items (judging/instrument_items.py), answered from the same cues: an
        ordinal item drops one point from the top of its scale per unclear word when its title or
        key speaks of simplicity, fluency or understanding, per missing fact for completeness or
        loss, per added fact for hallucination or misinterpretation, per missing or added fact
        otherwise (a higher code is taken as better); a count is the missing facts for loss or
        omission items, the added ones for misinterpretation or error items, both otherwise; a
        generated sentence matches a reference sentence when half their words are shared
        (Jaccard ≥ 0.5); error spans follow ``error_spans``; a choice takes its first option."""
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
            elif kind == "error_spans":
                answer[item["key"]] = error_spans(
                    sentence, text, categories=item["options"], severities=item.get("severities", [])
                )
            elif kind == "pairwise":
                answer[item["key"]] = self._preference(sentence, text, context.get("reference") or "", item)
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
        answer = sample_variation(answer, context, params)
        text = json.dumps(answer, ensure_ascii=False)
        return Completion(
            text=text,
            prompt_tokens=sum(len(m.get("content", "").split()) for m in messages),
            completion_tokens=len(text.split()),
            cost_usd=0.0,
            model=self.model,
            raw={"backend": self.name, "heuristic": True, "task": context["task"]},
        )
