"""What a judge answers, and how its answer is checked and summarised. Django-free.

Four judge tasks mirror the two surveys (PROTOCOL.md):

* ``radiologist_text`` — the radiologist rubric (Figure 5) on one simplification text: the five
  aspects, 1–5;
* ``radiologist_source`` — the radiologist's questions on the original sentence: its severity
  (appendix A.2) and whether laypeople can understand it (1–5);
* ``lay_original`` — the layperson's panel 1 (Figure 1): understanding, confidence, severity guess;
* ``lay_assisted`` — panel 2 with one simplification: the same three and helpfulness.

A model answers with one JSON object, validated strictly against the task's JSON schema
(``parse_answer``): anything else — text around the object, a missing or extra field, a score out of
range, an option not worded as in the survey, a refusal — raises ``AnswerError`` with a kind the run
records, and is never stored as an answer. Categorical answers are coded with the analysis coding of
annotation.scales (severity Critical = 1 … Healthy = 5), so that K samples are summarised by their
median with the spread beside it (``aggregate_samples``).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from annotation import scales

LIKERT_FIELDS = tuple(scales.EXPERT_ASPECTS)  # correctness … simplicity


@dataclass(frozen=True)
class AnswerField:
    name: str
    # A Likert field answers an integer 1–5; a categorical one a level name of `scale`.
    scale: scales.Scale

    @property
    def categorical(self) -> bool:
        return self.scale is not scales.LIKERT

    @property
    def bounds(self) -> tuple[int, int]:
        values = [level.value for level in self.scale.levels]
        return min(values), max(values)

    def code(self, answer: Any) -> int:
        return self.scale.value_of(answer) if self.categorical else int(answer)


TASKS: dict[str, tuple[AnswerField, ...]] = {
    "radiologist_text": tuple(AnswerField(name, scales.LIKERT) for name in LIKERT_FIELDS),
    "radiologist_source": (
        AnswerField("severity", scales.SEVERITY),
        AnswerField("original_simplicity", scales.LIKERT),
    ),
    "lay_original": (
        AnswerField("understanding", scales.UNDERSTANDING),
        AnswerField("confidence", scales.CONFIDENCE),
        AnswerField("severity_guess", scales.SEVERITY),
    ),
    "lay_assisted": (
        AnswerField("understanding", scales.UNDERSTANDING),
        AnswerField("confidence", scales.CONFIDENCE),
        AnswerField("severity_guess", scales.SEVERITY),
        AnswerField("helpfulness", scales.HELPFULNESS),
    ),
}
# Which tasks an instrument runs: the radiologist judge, and the lay judge (the Patient persona).
INSTRUMENT_TASKS: dict[str, tuple[str, ...]] = {
    "radiologist": ("radiologist_text", "radiologist_source"),
    "lay": ("lay_original", "lay_assisted"),
}
# Tasks asked once per source (on the original sentence); the others once per simplification text.
SOURCE_TASKS = frozenset({"radiologist_source", "lay_original"})
OPTIONAL_FIELDS = {"justification": {"type": "string"}}


def answer_schema(task: str) -> dict[str, Any]:
    """The JSON schema a `task` answer must satisfy."""
    properties: dict[str, Any] = {}
    for answer_field in TASKS[task]:
        if answer_field.categorical:
            properties[answer_field.name] = {"type": "string", "enum": answer_field.scale.names}
        else:
            low, high = answer_field.bounds
            properties[answer_field.name] = {"type": "integer", "minimum": low, "maximum": high}
    return {
        "type": "object",
        "properties": {**properties, **OPTIONAL_FIELDS},
        "required": [answer_field.name for answer_field in TASKS[task]],
        "additionalProperties": False,
    }


_VALIDATORS = {task: Draft202012Validator(answer_schema(task)) for task in TASKS}
# One fenced block and nothing else is still "only the JSON object": chat models add fences unasked.
_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)
_REFUSAL = re.compile(
    r"\b(I(?: a|')m (?:sorry|unable|not able)|I can(?:not|'t)|I won't|I am not comfortable|"
    r"as an AI|I must decline|not able to (?:provide|give|assess))\b",
    re.IGNORECASE,
)


class AnswerError(ValueError):
    """An answer that cannot be used. `kind`: malformed | refusal | out_of_range | schema."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def parse_answer(task: str, text: str) -> dict[str, Any]:
    """The validated answer of `task` in `text` (the fields of TASKS[task] and maybe a
    justification), or AnswerError."""
    return parse_json_answer(text, _VALIDATORS[task])


def parse_json_answer(text: str, validator: Draft202012Validator) -> dict[str, Any]:
    """The one JSON object in `text` (maybe in one fenced block), valid against `validator`'s
    schema, or AnswerError: refusal, malformed, out_of_range (a bound or an enum) or schema."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        if _REFUSAL.search(text):
            raise AnswerError("refusal", "the model declined to answer") from None
        raise AnswerError("malformed", f"not a JSON object ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict):
        raise AnswerError("malformed", f"a JSON {type(data).__name__}, not an object")
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "answer"
        kind = "out_of_range" if first.validator in ("minimum", "maximum", "enum") else "schema"
        raise AnswerError(kind, f"{where}: {first.message}")
    return data


def answer_codes(task: str, answer: Mapping[str, Any]) -> dict[str, int]:
    """The answer's fields as numbers (analysis coding of annotation.scales)."""
    return {answer_field.name: answer_field.code(answer[answer_field.name]) for answer_field in TASKS[task]}


def aggregate_samples(task: str, samples: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], dict]:
    """(median per field, spread per field) of K validated answers. The spread gives the K coded
    values, their min, max and population standard deviation, so that a reader sees how stable the
    judge was at the prompt's temperature."""
    if not samples:
        raise ValueError("no samples to aggregate")
    coded = [answer_codes(task, sample) for sample in samples]
    medians: dict[str, float] = {}
    spread: dict[str, dict[str, Any]] = {}
    for answer_field in TASKS[task]:
        values = [c[answer_field.name] for c in coded]
        medians[answer_field.name] = float(statistics.median(values))
        spread[answer_field.name] = {
            "values": values,
            "min": min(values),
            "max": max(values),
            "sd": float(statistics.pstdev(values)),
        }
    return medians, spread


def retry_message(error: AnswerError) -> str:
    """The user turn that asks the model again after an unusable answer."""
    return (
        f"Your answer could not be used: {error}. Answer again with only the JSON object described "
        "above, using the exact option wording and whole numbers in range."
    )
