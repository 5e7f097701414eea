"""The shapes of the study settings kept as JSON (Study.background_questions, AttentionCheck.options,
System.config, Source.metadata), checked before they reach participants: a string where a list of
options belongs would otherwise be shown as one option per letter. Pure functions returning
messages, one per problem, that name the entry and the field; the models' clean() raise them."""

from __future__ import annotations

import re
from typing import Any

QUESTION_FIELDS = ("key", "question", "options")
# A background key becomes a form field name and a column of the exports.
KEY_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MAX_OPTION_LENGTH = 200


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def options_errors(options: Any, *, where: str) -> list[str]:
    """A list of distinct, non-empty answer texts (an empty list: the answer is typed freely)."""
    if not isinstance(options, list):
        if isinstance(options, str):
            return [
                f'{where}: "options" must be a list of answers such as ["Yes", "No"], '
                f"not the text {_shown(options)}."
            ]
        return [f'{where}: "options" must be a list of answers, not {type(options).__name__}.']
    errors = []
    seen: set[str] = set()
    for index, option in enumerate(options, start=1):
        if not isinstance(option, str | int | float) or isinstance(option, bool):
            errors.append(f"{where}: option {index} must be a text, not {_shown(option)}.")
            continue
        text = str(option).strip()
        if not text:
            errors.append(f"{where}: option {index} is empty.")
        elif len(text) > MAX_OPTION_LENGTH:
            errors.append(f"{where}: option {index} is longer than {MAX_OPTION_LENGTH} characters.")
        elif text.casefold() in seen:
            errors.append(f"{where}: option {index} ({text!r}) is listed twice.")
        seen.add(text.casefold())
    if len(options) == 1:
        errors.append(f"{where}: a single option leaves nothing to choose; give two or more, or none.")
    return errors


def background_questions_errors(value: Any) -> list[str]:
    """Study.background_questions: a list of {"key", "question", "options"?} with unique keys."""
    if not isinstance(value, list):
        return [
            'Background questions must be a list like [{"key": "age", "question": "Your age?", '
            f'"options": ["18-39", "40-64", "65+"]}}], not {type(value).__name__}.'
        ]
    errors = []
    keys: set[str] = set()
    for index, entry in enumerate(value, start=1):
        where = f"Background question {index}"
        if not isinstance(entry, dict):
            errors.append(
                f'{where} must be an object with "key", "question" and "options", not {_shown(entry)}.'
            )
            continue
        if isinstance(entry.get("key"), str) and entry["key"].strip():
            where = f"Background question {index} ({entry['key'].strip()!r})"
        unknown = sorted(set(entry) - set(QUESTION_FIELDS))
        if unknown:
            names = ", ".join(map(repr, unknown))
            errors.append(f"{where}: unknown field(s) {names}; use {', '.join(QUESTION_FIELDS)}.")
        key = entry.get("key")
        if not isinstance(key, str) or not key.strip():
            errors.append(f'{where}: "key" is missing or empty.')
        elif not KEY_PATTERN.match(key.strip()):
            errors.append(f'{where}: "key" may hold only letters, digits and _ and must start with a letter.')
        elif key.strip() in keys:
            errors.append(f"{where}: the key {key.strip()!r} is used by an earlier question.")
        else:
            keys.add(key.strip())
        question = entry.get("question")
        if not isinstance(question, str) or not question.strip():
            errors.append(f'{where}: "question" is missing or empty.')
        if "options" in entry:
            errors += options_errors(entry["options"], where=where)
    return errors


def attention_check_errors(*, prompt: Any, options: Any, expected_answer: Any) -> list[str]:
    """AttentionCheck: a prompt, optional options, and an expected answer among the options."""
    where = "Attention check"
    errors = []
    if not isinstance(prompt, str) or not prompt.strip():
        errors.append(f'{where}: "prompt" is empty.')
    option_problems = options_errors(options, where=where)
    errors += option_problems
    expected = str(expected_answer or "").strip()
    if not expected:
        errors.append(f'{where}: "expected answer" is empty.')
    elif not option_problems and options:
        normalized = {" ".join(str(o).split()).casefold() for o in options}
        if " ".join(expected.split()).casefold() not in normalized:
            errors.append(f"{where}: the expected answer {expected!r} is not one of the options.")
    return errors


def object_errors(value: Any, *, field: str) -> list[str]:
    """A JSON object (System.config, Source.metadata): names to values."""
    if not isinstance(value, dict):
        return [f'{field} must be a JSON object like {{"name": "value"}}, not {type(value).__name__}.']
    return []
