"""The instrument editor's forms (console/instrument_views.py). Each turns what a researcher typed
into a new *draft document* — the study's current definition with one change (an item added, an
item's texts edited, an item removed or moved, the whole document replaced) — which the view
validates with instruments.validation.instrument_from_data and saves with the one service,
annotation.instrument_services.study_instrument_save. The forms check only what the document
cannot say (a number that is not a number, five labels but four codes); every rule of an
instrument stays in instruments/validation.py, whose path-named errors are put back on the field
that holds the path (`items[9].wording.es` → the Spanish wording box)."""

from __future__ import annotations

import copy
import re
from typing import Any, cast

from django import forms
from django.conf import settings

from instruments.schema import AppliesTo, ItemKind

# The kinds a researcher adds here; the others (sentence matching, error spans, pairwise) are
# written in the YAML.
ADDED_KINDS = (
    (ItemKind.ORDINAL.value, "Scale (ordinal): labelled points with codes, e.g. a 5-point Likert scale"),
    (ItemKind.SINGLE_CHOICE.value, "Single choice among options"),
    (ItemKind.MULTIPLE_CHOICE.value, "Multiple choice among options"),
    (ItemKind.COUNT.value, "Count (a whole number ≥ 0)"),
    (ItemKind.FREE_TEXT.value, "Free text"),
)
APPLIES_TO = (
    (AppliesTo.SIMPLIFICATION.value, "each simplification shown"),
    (AppliesTo.SOURCE.value, "the original (source)"),
    (AppliesTo.PAIR.value, "a (simplification, reference) pair"),
)
# The most a researcher may upload or paste: an instrument of a few hundred items.
MAX_DOCUMENT_BYTES = settings.RADLAY_FILE_LIMITS.instrument_bytes
FREE_TEXT_LENGTH = 2000
TEXTS = ("title", "wording", "help")


def _given(data: dict[str, Any], name: str, languages: tuple[str, ...]) -> dict[str, str]:
    """The languages a text was typed in (an empty box is a missing translation)."""
    return {lang: text for lang in languages if (text := data.get(f"{name}_{lang}", "").strip())}


def _labels_at(labels: dict[str, list[str]], i: int) -> dict[str, str]:
    """The i-th label in each language that has one."""
    return {lang: texts[i] for lang, texts in labels.items() if i < len(texts)}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class _Languages:
    """Fields per language the instrument offers (`wording_en`, `wording_es` …)."""

    languages: tuple[str, ...] = ()

    def by_language(self) -> list[tuple[str, list[forms.BoundField]]]:
        """Each offered language with its fields, as the page groups them."""
        form: Any = self
        return [
            (
                language,
                [
                    form[f"{name}_{language}"]
                    for name in (*TEXTS, "labels")
                    if f"{name}_{language}" in form.fields
                ],
            )
            for language in self.languages
        ]


class SaveFields(forms.Form):
    """What every saving form of the editor carries: the revision the page showed (a save over a
    newer one is refused) and, once answers exist, why the instrument changes."""

    based_on = forms.CharField(widget=forms.HiddenInput, required=False)
    note = forms.CharField(
        required=False,
        max_length=500,
        label="Change note",
        help_text="Why the instrument changes: kept with the new version (required once answers exist).",
    )

    def __init__(self, *args: Any, needs_note: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.needs_note = needs_note

    def clean_note(self) -> str:
        note: str = self.cleaned_data.get("note", "").strip()
        if self.needs_note and not note:
            raise forms.ValidationError(
                "Answers exist under this version: say why it changes "
                "(the note is kept with the new version)."
            )
        return note


class ItemAddForm(_Languages, SaveFields):
    key = forms.CharField(
        max_length=60,
        help_text="A short name in lower case (letters, digits and _), e.g. actionability: "
        "the column name in exports and the analysis.",
    )
    kind = forms.ChoiceField(choices=ADDED_KINDS, initial=ItemKind.ORDINAL.value)
    applies_to = forms.ChoiceField(choices=APPLIES_TO, label="Asked about")
    phase = forms.ChoiceField(
        required=False, label="Panel", help_text="The lay flow asks an added item in one panel."
    )
    roles = forms.CharField(max_length=200, help_text="Who is asked (comma-separated roles).")
    required = forms.BooleanField(required=False, initial=True, label="An answer is required")
    codes = forms.CharField(
        required=False,
        max_length=300,
        label="Codes of the points",
        help_text="Scale: the number each point stands for in the analysis, in order (e.g. 1 2 3 4 5); "
        "empty: 1, 2, 3 …",
    )
    option_keys = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Option keys",
        help_text="Choices: one key per line (lower case), in the order of the labels.",
    )
    max_count = forms.IntegerField(required=False, min_value=1, label="Largest count (optional)")
    max_length = forms.IntegerField(
        required=False, min_value=1, initial=FREE_TEXT_LENGTH, label="Longest answer (characters)"
    )

    def __init__(
        self,
        *args: Any,
        languages: tuple[str, ...],
        phases: tuple[str, ...],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.languages = languages
        cast(forms.ChoiceField, self.fields["phase"]).choices = [("", "—"), *((p, p) for p in phases)]
        if not phases:
            del self.fields["phase"]
        for language in languages:
            self.fields[f"title_{language}"] = forms.CharField(
                required=False, max_length=200, label=f"Title ({language})", help_text="Optional, short."
            )
            self.fields[f"wording_{language}"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 2}), label=f"Wording ({language})"
            )
            self.fields[f"help_{language}"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 2}), label=f"Help ({language})"
            )
            self.fields[f"labels_{language}"] = forms.CharField(
                required=False,
                widget=forms.Textarea(attrs={"rows": 5}),
                label=f"Point or option labels ({language})",
                help_text="Scale or choices: one label per line, in order.",
            )

    def clean_codes(self) -> list[int] | None:
        text = self.cleaned_data.get("codes", "")
        parts = [part for part in re.split(r"[\s,;]+", text) if part]
        if not parts:
            return None
        try:
            return [int(part) for part in parts]
        except ValueError:
            raise forms.ValidationError("Codes are whole numbers, e.g. 1 2 3 4 5.") from None

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = data.get("kind")
        if kind in (ItemKind.ORDINAL, ItemKind.SINGLE_CHOICE, ItemKind.MULTIPLE_CHOICE):
            counts = {
                language: len(_lines(data.get(f"labels_{language}", ""))) for language in self.languages
            }
            first = self.languages[0]
            for language, n in counts.items():
                # None typed yet is a missing translation, which the validation names per point.
                if n and n != counts[first]:
                    self.add_error(
                        f"labels_{language}",
                        f"{n} labels here but {counts[first]} in {first}: one per line each",
                    )
            codes = data.get("codes")
            if kind == ItemKind.ORDINAL and codes is not None and len(codes) != counts[first]:
                self.add_error("codes", f"{len(codes)} codes for {counts[first]} labels")
            keys = _lines(data.get("option_keys", ""))
            if kind != ItemKind.ORDINAL and len(keys) != counts[first]:
                self.add_error("option_keys", f"{len(keys)} keys for {counts[first]} labels")
        return data

    def item_data(self) -> dict[str, Any]:
        """The new item as a document entry (call after is_valid)."""
        data = self.cleaned_data
        kind = data["kind"]
        item: dict[str, Any] = {
            "key": data["key"].strip(),
            "kind": kind,
            "applies_to": data["applies_to"],
            "roles": [role.strip() for role in data["roles"].split(",") if role.strip()],
        }
        if data.get("phase"):
            item["phases"] = [data["phase"]]
        for name in TEXTS:
            texts = _given(data, name, self.languages)
            # An optional text is left out entirely when no language has it; in part, the
            # validation names each missing language.
            if name == "wording" or texts:
                item[name] = texts
        if not data["required"]:
            item["required"] = False
        labels = {lang: _lines(data[f"labels_{lang}"]) for lang in self.languages}
        n = len(labels[self.languages[0]]) if self.languages else 0
        if kind == ItemKind.ORDINAL:
            codes = data["codes"] or list(range(1, n + 1))
            item["scale"] = {
                "points": [{"code": code, "label": _labels_at(labels, i)} for i, code in enumerate(codes[:n])]
            }
        elif kind in (ItemKind.SINGLE_CHOICE, ItemKind.MULTIPLE_CHOICE):
            keys = _lines(data["option_keys"])
            item["options"] = [{"key": key, "label": _labels_at(labels, i)} for i, key in enumerate(keys[:n])]
        elif kind == ItemKind.COUNT and data.get("max_count") is not None:
            item["max_count"] = data["max_count"]
        elif kind == ItemKind.FREE_TEXT:
            item["max_length"] = data.get("max_length") or FREE_TEXT_LENGTH
        return item

    def draft(self, definition: dict[str, Any]) -> dict[str, Any]:
        document = copy.deepcopy(definition)
        document["items"] = [*document.get("items", []), self.item_data()]
        return document

    def field_of(self, rest: str) -> str | None:
        """The field holding the part of the new item at path `rest` (after `items[N].`)."""
        head, _, tail = rest.partition(".")
        head = head.split("[")[0]
        if head in TEXTS and tail in self.languages:
            return f"{head}_{tail}"
        if head == "scale":
            language = tail.rsplit(".", 1)[-1]
            if ".label." in f".{tail}" and language in self.languages:
                return f"labels_{language}"
            return "codes" if tail.endswith("code") else f"labels_{self.languages[0]}"
        if head == "options":
            language = tail.rsplit(".", 1)[-1]
            if "label" in tail and language in self.languages:
                return f"labels_{language}"
            return "option_keys"
        if head == "phases":
            return "phase" if "phase" in self.fields else None
        return head if head in self.fields else None


class ItemTextsForm(_Languages, SaveFields):
    """An item's title, wording and help in each language the instrument offers (its structure
    stays: answers given under it keep their meaning)."""

    def __init__(self, *args: Any, item: dict[str, Any], languages: tuple[str, ...], **kwargs: Any) -> None:
        initial = kwargs.pop("initial", {}) or {}
        for name in TEXTS:
            for language in languages:
                initial.setdefault(f"{name}_{language}", item.get(name, {}).get(language, ""))
        super().__init__(*args, initial=initial, **kwargs)
        self.item_key = item["key"]
        self.languages = languages
        for language in languages:
            self.fields[f"title_{language}"] = forms.CharField(
                required=False, max_length=200, label=f"Title ({language})"
            )
            self.fields[f"wording_{language}"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 3}), label=f"Wording ({language})"
            )
            self.fields[f"help_{language}"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 2}), label=f"Help ({language})"
            )

    def draft(self, definition: dict[str, Any]) -> dict[str, Any]:
        document = copy.deepcopy(definition)
        for item in document["items"]:
            if item.get("key") != self.item_key:
                continue
            for name in TEXTS:
                texts = _given(self.cleaned_data, name, self.languages)
                if name == "wording" or texts:
                    item[name] = texts
                else:
                    item.pop(name, None)
        return document

    def field_of(self, rest: str) -> str | None:
        head, _, tail = rest.partition(".")
        return f"{head}_{tail}" if head in TEXTS and tail in self.languages else None


class ItemMoveForm(SaveFields):
    """Remove an added item, or move it one place up or down among the items."""

    ACTIONS = ("up", "down", "remove")
    item = forms.CharField(max_length=60)
    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS])

    def draft(self, definition: dict[str, Any]) -> dict[str, Any]:
        document = copy.deepcopy(definition)
        items: list[dict[str, Any]] = document["items"]
        keys = [item.get("key") for item in items]
        key, action = self.cleaned_data["item"], self.cleaned_data["action"]
        if key not in keys:
            raise forms.ValidationError(f"The instrument has no item {key!r}.")
        at = keys.index(key)
        if action == "remove":
            del items[at]
        else:
            to = at - 1 if action == "up" else at + 1
            if 0 <= to < len(items):
                items[at], items[to] = items[to], items[at]
        return document

    def field_of(self, rest: str) -> str | None:
        return None


class DefinitionForm(SaveFields):
    """The whole instrument as YAML or JSON: typed in the page's textarea or uploaded as a file
    (one of them). All or nothing: a document with any error saves nothing."""

    document = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false", "class": "code"}),
        label="The instrument as YAML",
        max_length=MAX_DOCUMENT_BYTES,
    )
    file = forms.FileField(
        required=False, label="…or upload a .yaml, .yml or .json file", help_text="At most 1 MB."
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        upload = data.get("file")
        if upload is not None:
            if upload.size > MAX_DOCUMENT_BYTES:
                self.add_error(
                    "file", "The file is larger than 1 MB: an instrument is a few hundred kB at most."
                )
                return data
            name = upload.name.lower()
            if not name.endswith((".yaml", ".yml", ".json")):
                self.add_error("file", "An instrument file is .yaml, .yml or .json.")
                return data
            try:
                data["text"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                self.add_error("file", "The file is not UTF-8 text: save it as UTF-8 YAML or JSON.")
                return data
            data["format"] = "json" if name.endswith(".json") else "yaml"
        elif data.get("document", "").strip():
            data["text"], data["format"] = data["document"], "yaml"
        else:
            self.add_error("document", "Paste the instrument's YAML here, or choose a file to upload.")
        return data

    def field_of(self, rest: str) -> str | None:
        return None
