"""A study's preference pairs for preference training (DPO and the like): JSONL, or a `datasets`
folder (save_to_disk) with a dataset card. The pairs come from evaluation.exports.preference_selectors; the
prompt of every pair is the original rendered with the generation prompt of one family
(generation/prompts), so that a model trained on them is asked exactly as radlay's generator asks.

One record per pair:

    prompt, prompt_family, prompt_version, source, original, chosen, rejected, chosen_systems,
    rejected_systems, preference_source (lay_most_least | pairwise | radiologist_rating),
    rater_count, votes_for, votes_against, margin (ratings: the difference of the mean scores)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from annotation.models import Study, StudyInstrument
from evaluation.exports.preference_pairs import KINDS, LAY, PAIRWISE, RATING
from evaluation.exports.preference_selectors import StudyPreferences, study_preferences

FIELDS = (
    "prompt",
    "prompt_family",
    "prompt_version",
    "source",
    "original",
    "chosen",
    "rejected",
    "chosen_systems",
    "rejected_systems",
    "preference_source",
    "rater_count",
    "votes_for",
    "votes_against",
    "margin",
)
PROTOCOL_PRESETS = ("protocol_003_layperson", "protocol_003_radiologist")


class NoPreferencesError(ValueError):
    """The study has no judgment that makes a preference pair."""


def preference_records(
    *,
    study: Study,
    prompt_family: str = "plain",
    prompt_version: str | None = None,
    rating_threshold: float = 1.0,
    originals: bool = False,
) -> tuple[list[dict[str, Any]], StudyPreferences]:
    """The study's pairs as records, or NoPreferencesError naming what is missing. The sentences
    (`original`, and the prompt made of it) are de-identified unless `originals` (an owner's
    request, recorded by the caller: privacy.services.originals_release_record)."""
    from generation.prompts.registry import DEFAULT_VERSION, load_prompts

    prompts = load_prompts(prompt_version or DEFAULT_VERSION)
    if prompt_family not in ("plain", "cot"):
        raise ValueError(f"prompt family must be plain or cot, not {prompt_family!r}")
    found = study_preferences(study=study, rating_threshold=rating_threshold, originals=originals)
    summary = found.summary
    if not summary.pairs:
        raise NoPreferencesError(
            f"Study {study.slug!r} has no preference pairs: no lay most/least answer, no pairwise answer and "
            f"no two texts whose radiologist ratings differ by {rating_threshold:g} or more "
            f"(ties dropped: {summary.ties[LAY]} lay, {summary.ties[PAIRWISE]} pairwise, "
            f"{summary.ties[RATING]} rating)."
        )
    rendered: dict[Any, str] = {}
    records = []
    for pair in summary.pairs:
        original = found.originals[pair.source]
        if pair.source not in rendered:
            rendered[pair.source] = prompts.render(prompt_family, sentence=original)
        records.append(
            {
                "prompt": rendered[pair.source],
                "prompt_family": prompt_family,
                "prompt_version": prompts.version,
                "source": str(pair.source),
                "original": original,
                "chosen": found.texts[pair.chosen],
                "rejected": found.texts[pair.rejected],
                "chosen_systems": found.systems.get(pair.chosen, []),
                "rejected_systems": found.systems.get(pair.rejected, []),
                "preference_source": pair.kind,
                "rater_count": pair.rater_count,
                "votes_for": pair.votes_for,
                "votes_against": pair.votes_against,
                "margin": pair.margin,
            }
        )
    return records, found


def write_jsonl(records: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records written by write_jsonl; a line that is not a pair names itself."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
        missing = [name for name in ("prompt", "chosen", "rejected") if not isinstance(record.get(name), str)]
        if missing:
            raise ValueError(f"{path}:{number}: no {', '.join(missing)} text")
        records.append(record)
    return records


def _citations(study: Study) -> list[str]:
    definitions = [
        row.definition for row in StudyInstrument.objects.filter(study=study, is_current=True).order_by("key")
    ]
    if not definitions:  # a study that never set up instruments runs the protocol's
        import yaml

        from instruments.presets import preset_path

        definitions = [
            yaml.safe_load(preset_path(name).read_text(encoding="utf-8")) for name in PROTOCOL_PRESETS
        ]
    lines = []
    for definition in definitions:
        citation = definition.get("citation") or {}
        if citation:
            year = f" ({citation['year']})" if citation.get("year") else ""
            lines.append(
                f"- `{definition.get('key', '?')}`: {citation.get('authors', '')}{year}. "
                f"*{citation.get('title', '')}*. {citation.get('venue', '')}. "
                f"{citation.get('section', '')}".strip()
            )
    return list(dict.fromkeys(lines))


DEIDENTIFIED_NOTE = (
    "The sentences (`original`, and the prompts made of them) are radlay's de-identified text: "
    "identifiers its de-identification found, and the study's review confirmed, are replaced by "
    "typed placeholders such as `[NAME]`. No tool guarantees de-identification: **the study team "
    "must check the data** before the dataset leaves the institution."
)
ORIGINALS_NOTE = (
    "**The sentences are the original reports**, released at an owner's request (recorded in the "
    "study's activity log): they may hold protected health information and must not leave the "
    "institution unless the data's agreement allows it."
)


def dataset_card(
    *, study: Study, records: list[dict[str, Any]], found: StudyPreferences, rating_threshold: float
) -> str:
    counts = {kind: sum(1 for r in records if r["preference_source"] == kind) for kind in KINDS}
    citations = "\n".join(_citations(study)) or "- (the study records no instrument citation)"
    family = records[0]["prompt_family"]
    version = records[0]["prompt_version"]
    deidentification = ORIGINALS_NOTE if found.original_reports else DEIDENTIFIED_NOTE
    return f"""---
pretty_name: "{study.title or study.slug} — preference pairs"
task_categories:
- text-generation
language:
- en
---

# {study.title or study.slug}: preference pairs of radiology-sentence simplifications

Exported by radlay from study `{study.slug}`: {len(records)} pairs (chosen, rejected) of two
different simplifications of the same original sentence, for preference training (DPO and the like).

## Fields

| field | meaning |
|---|---|
| `prompt` | the original in radlay's generation prompt (family `{family}`, version `{version}`) |
| `prompt_family`, `prompt_version` | which prompt `prompt` is |
| `source`, `original` | the sentence's key in the study and its text |
| `chosen`, `rejected` | the preferred and the other simplification |
| `chosen_systems`, `rejected_systems` | the systems that produced each text (a shared text is one text) |
| `preference_source` | `lay_most_least`, `pairwise` or `radiologist_rating` (below) |
| `rater_count` | raters who judged this pair (lay, pairwise) or rated either text (radiologists) |
| `votes_for`, `votes_against` | raters for the chosen / for the rejected text (lay, pairwise) |
| `margin` | radiologist ratings: difference of the two texts' mean scores (1–5 scale) |

## How the labels were collected

- **lay_most_least** ({counts[LAY]} pairs): laypeople read every simplification of a sentence and
  ticked the most and least preferred. As in the study's analysis (best–worst scaling), a
  most-preferred text beats every other text shown and every text shown beats a least-preferred one;
  a text ticked both counts as neither. The raters' votes on a pair are added up: the majority
  direction is kept, an even split is dropped ({found.summary.ties[LAY]} ties dropped).
- **pairwise** ({counts[PAIRWISE]} pairs): raters compared two texts and chose one; "tie" and
  "neither" count as raters of the pair for neither side; majority as above
  ({found.summary.ties[PAIRWISE]} ties dropped).
- **radiologist_rating** ({counts[RATING]} pairs): radiologists rated each text on correctness,
  completeness, hallucination, structure and simplicity (1–5). A text's score is the mean over
  radiologists of each one's mean over the aspects they rated; two texts whose scores differ by at
  least {rating_threshold:g} make a pair ({found.summary.ties[RATING]} closer pairs dropped).

Participants screened out by failed attention checks, previews and pilot participants are left out,
as in the analysis.

## Instruments

{citations}

## Licence

Not set by radlay: **the study team must choose and state the licence** (and check it is compatible
with the consent participants gave and the source reports' terms) before sharing this dataset.

## De-identification

The texts are radiology sentences of study `{study.slug}` and their simplifications; raters appear
only as counts (no participant identifier is exported). {deidentification}"""


def write_hf_dataset(
    records: list[dict[str, Any]],
    folder: Path,
    *,
    study: Study,
    found: StudyPreferences,
    rating_threshold: float,
) -> None:
    """A `datasets` folder (Dataset.save_to_disk) with README.md, the dataset card."""
    import datasets

    columns = {name: [record[name] for record in records] for name in FIELDS}
    features = datasets.Features(
        {
            **{
                name: datasets.Value("string")
                for name in (
                    "prompt",
                    "prompt_family",
                    "prompt_version",
                    "source",
                    "original",
                    "chosen",
                    "rejected",
                    "preference_source",
                )
            },
            "chosen_systems": datasets.Sequence(datasets.Value("string")),
            "rejected_systems": datasets.Sequence(datasets.Value("string")),
            "rater_count": datasets.Value("int32"),
            "votes_for": datasets.Value("int32"),
            "votes_against": datasets.Value("int32"),
            "margin": datasets.Value("float64"),
        }
    )
    dataset = datasets.Dataset.from_dict(columns, features=features)
    dataset.save_to_disk(str(folder))
    card = dataset_card(study=study, records=records, found=found, rating_threshold=rating_threshold)
    (folder / "README.md").write_text(card, encoding="utf-8")
