"""Versioned judge prompt sets: one YAML file per version in this folder. Django-free.

The same conventions as the generation prompts (generation/prompts/registry.py, whose
PromptTemplate and strict `{field}` rendering are reused): a changed prompt is a new file with a new
`version`, and every judge run stores the version and digest of the words it sent. A judge set
differs in its prompts (one per judge task, see judging.instrument.TASKS) and in carrying the
sampling temperature the prompt was written for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from generation.prompts.registry import PromptError, PromptTemplate
from judging.instrument import TASKS

DEFAULT_VERSION = "judge-v1"
PROMPTS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class JudgePromptSet:
    version: str
    templates: Mapping[str, PromptTemplate]
    temperature: float
    source: str = ""

    def __post_init__(self) -> None:
        missing = [task for task in TASKS if task not in self.templates]
        if missing:
            raise PromptError(f"judge prompt set {self.version!r} lacks prompts: {', '.join(missing)}")

    def render(self, task: str, /, **values: str) -> str:
        """The prompt of `task` filled with `values` (exactly its fields; whitespace-stripped)."""
        try:
            template = self.templates[task]
        except KeyError:
            raise PromptError(f"judge prompt set {self.version!r} has no prompt {task!r}") from None
        expected, given = set(template.fields), set(values)
        if expected != given:
            raise PromptError(
                f"judge prompt {task!r} ({self.version}): expects {sorted(expected)}, got {sorted(given)}"
            )
        text = template.text
        for name in template.fields:
            text = text.replace("{" + name + "}", "\0" + name + "\0")
        # Placeholders were masked first, so a value containing "{field}" is never expanded again.
        for name, value in values.items():
            text = text.replace("\0" + name + "\0", str(value).strip())
        return text

    @property
    def digest(self) -> str:
        payload = {name: t.text for name, t in sorted(self.templates.items())}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def judge_prompt_set_from_dict(data: Mapping[str, Any]) -> JudgePromptSet:
    try:
        version = str(data["version"])
        raw = data["prompts"]
        temperature = float(data["temperature"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PromptError(f"judge prompt set needs 'version', 'temperature' and 'prompts': {exc}") from None
    templates = {
        name: PromptTemplate(name=name, text=str(spec["text"]), agent=str(spec.get("agent", "radiologist")))
        for name, spec in raw.items()
    }
    return JudgePromptSet(
        version=version, templates=templates, temperature=temperature, source=str(data.get("source", ""))
    )


@cache
def _prompt_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for path in sorted(PROMPTS_DIR.glob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            version = str(yaml.safe_load(handle)["version"])
        if version in files:
            raise PromptError(f"judge prompt version {version!r} is defined twice")
        files[version] = path
    return files


def available_versions() -> list[str]:
    return sorted(_prompt_files())


@cache
def load_judge_prompts(version: str = DEFAULT_VERSION) -> JudgePromptSet:
    files = _prompt_files()
    if version not in files:
        raise PromptError(f"unknown judge prompt version {version!r}; available: {', '.join(sorted(files))}")
    with files[version].open(encoding="utf-8") as handle:
        return judge_prompt_set_from_dict(yaml.safe_load(handle))
