"""Versioned prompt sets: the agents' prompts as data, rendered from named fields. Django-free.

A prompt set is one YAML file in this folder (`v1.yaml` = the paper's prompts, version
"seed003-v1"). Its templates use `{field}` placeholders; `render("plain", sentence=...)` fills them.
Rendering is strict: a missing or unexpected field raises, so a typo cannot silently send a prompt
with a hole in it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DEFAULT_VERSION = "seed003-v1"
PROMPTS_DIR = Path(__file__).resolve().parent
# The six prompts the self-correction loop needs (seed 003, appendix A.3-A.4).
REQUIRED_PROMPTS = ("plain", "cot", "radiologist", "patient", "processor", "refine")
_FIELD = re.compile(r"\{([a-z_]+)\}")
_TERMINAL = (".", "!", "?")


class PromptError(ValueError):
    """A prompt set is malformed, unknown, or was rendered with the wrong fields."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    agent: str
    reference: str = ""

    @property
    def fields(self) -> tuple[str, ...]:
        """Field names in order of first appearance."""
        return tuple(dict.fromkeys(_FIELD.findall(self.text)))


@dataclass(frozen=True)
class PromptSet:
    version: str
    templates: Mapping[str, PromptTemplate]
    source: str = ""
    placeholders: Mapping[str, str] = field(default_factory=dict)
    # "merge": a template's "." right after {sentence} is dropped when the sentence already ends with
    # terminal punctuation (see v1.yaml for why); "keep": values are pasted verbatim.
    sentence_final_punctuation: str = "merge"

    def __post_init__(self) -> None:
        missing = [name for name in REQUIRED_PROMPTS if name not in self.templates]
        if missing:
            raise PromptError(f"prompt set {self.version!r} lacks prompts: {', '.join(missing)}")
        if self.sentence_final_punctuation not in ("merge", "keep"):
            raise PromptError(
                f"sentence_final_punctuation must be 'merge' or 'keep', not "
                f"{self.sentence_final_punctuation!r}"
            )

    def fields(self, name: str) -> tuple[str, ...]:
        return self._template(name).fields

    def render(self, name: str, /, **values: str) -> str:
        """Fill prompt `name` with `values` (one per field, no more, no fewer).

        Values are stripped of surrounding whitespace (an LLM answer often starts with a newline).
        """
        template = self._template(name)
        expected = set(template.fields)
        given = set(values)
        if given != expected:
            parts = []
            if expected - given:
                parts.append(f"missing {sorted(expected - given)}")
            if given - expected:
                parts.append(f"unexpected {sorted(given - expected)}")
            raise PromptError(f"prompt {name!r} ({self.version}): {'; '.join(parts)}")
        cleaned = {key: str(value).strip() for key, value in values.items()}
        text = template.text
        if (
            self.sentence_final_punctuation == "merge"
            and "sentence" in cleaned
            and cleaned["sentence"].endswith(_TERMINAL)
        ):
            text = text.replace("{sentence}.", "{sentence}")
        # One pass over the template, so a value that itself contains "{field}" is never re-expanded.
        return _FIELD.sub(lambda match: cleaned[match.group(1)], text)

    @property
    def digest(self) -> str:
        """sha256 of the templates and rendering rule: changes whenever any sent word would."""
        payload = {
            "templates": {name: t.text for name, t in sorted(self.templates.items())},
            "sentence_final_punctuation": self.sentence_final_punctuation,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        """Plain data for provenance (stored next to a generated simplification)."""
        return {
            "version": self.version,
            "digest": self.digest,
            "source": self.source,
            "sentence_final_punctuation": self.sentence_final_punctuation,
            "prompts": {name: t.text for name, t in self.templates.items()},
        }

    def _template(self, name: str) -> PromptTemplate:
        try:
            return self.templates[name]
        except KeyError:
            raise PromptError(f"prompt set {self.version!r} has no prompt {name!r}") from None


def prompt_set_from_dict(data: Mapping[str, Any]) -> PromptSet:
    """Build a PromptSet from the YAML structure (also usable for a set stored elsewhere)."""
    try:
        version = str(data["version"])
        raw_prompts = data["prompts"]
    except (KeyError, TypeError) as exc:
        raise PromptError(f"prompt set needs 'version' and 'prompts': {exc}") from None
    templates = {}
    for name, spec in raw_prompts.items():
        if isinstance(spec, str):
            spec = {"text": spec}
        templates[name] = PromptTemplate(
            name=name,
            text=str(spec["text"]),
            agent=str(spec.get("agent", "generator")),
            reference=str(spec.get("reference", "")),
        )
    placeholders = dict(data.get("placeholders") or {})
    undeclared = (
        sorted({f for t in templates.values() for f in t.fields} - set(placeholders)) if placeholders else []
    )
    if undeclared:
        raise PromptError(f"prompt set {version!r} uses undeclared fields {undeclared}")
    return PromptSet(
        version=version,
        templates=templates,
        source=str(data.get("source", "")),
        placeholders=placeholders,
        sentence_final_punctuation=str(data.get("sentence_final_punctuation", "merge")),
    )


@cache
def _prompt_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for path in sorted(PROMPTS_DIR.glob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            version = str(yaml.safe_load(handle)["version"])
        if version in files:
            raise PromptError(
                f"prompt version {version!r} is defined twice ({files[version].name}, {path.name})"
            )
        files[version] = path
    return files


def available_versions() -> list[str]:
    return sorted(_prompt_files())


def load_prompts(version: str = DEFAULT_VERSION) -> PromptSet:
    """The prompt set with this version string (e.g. "seed003-v1"); parsed once per process."""
    return _load(version)


@cache
def _load(version: str) -> PromptSet:
    files = _prompt_files()
    if version not in files:
        raise PromptError(f"unknown prompt version {version!r}; available: {', '.join(sorted(files))}")
    with files[version].open(encoding="utf-8") as handle:
        return prompt_set_from_dict(yaml.safe_load(handle))
