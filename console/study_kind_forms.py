"""The new-study form's choice of kind: a shipped preset (studies/study_kinds.py) or the team's
own instrument file, checked here as a document (size, format, the instrument rules) and then by
the service (which flow can ask it)."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms import StudyCreateForm
from instruments.validation import InstrumentError, instrument_from_json, instrument_from_yaml
from studies.study_kinds import KIND_PRESETS, study_kinds

OWN_FILE = "file"
MAX_INSTRUMENT_BYTES = 1_000_000


class StudyKindCreateForm(StudyCreateForm):
    kind = forms.ChoiceField(
        choices=[(kind.key, kind.title) for kind in study_kinds()]
        + [(OWN_FILE, "Our own instrument (upload its file)")],
        initial=KIND_PRESETS[0],
        required=False,  # none chosen: the protocol, as before the choice existed
        widget=forms.RadioSelect,
        label="What the study asks",
    )
    instrument_file = forms.FileField(
        required=False,
        label="Instrument file (.yaml, .yml or .json)",
        help_text="Only with “Our own instrument”. At most 1 MB; the rules are docs/guide/instruments.md's.",
    )

    class Meta(StudyCreateForm.Meta):
        fields = ["title", "slug", "unit", "language"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        data["kind"] = data.get("kind") or KIND_PRESETS[0]
        upload = data.get("instrument_file")
        if data.get("kind") != OWN_FILE:
            if upload is not None:
                self.add_error("instrument_file", "Choose “Our own instrument” to use a file, or remove it.")
            data["instrument"] = None
            return data
        if upload is None:
            self.add_error("instrument_file", "Choose the instrument's file.")
            return data
        name = upload.name.lower()
        if upload.size > MAX_INSTRUMENT_BYTES:
            self.add_error("instrument_file", "The file is larger than 1 MB: an instrument is far smaller.")
        elif not name.endswith((".yaml", ".yml", ".json")):
            self.add_error("instrument_file", "An instrument file is .yaml, .yml or .json.")
        else:
            try:
                text = upload.read().decode("utf-8-sig")
                read = instrument_from_json if name.endswith(".json") else instrument_from_yaml
                data["instrument"] = read(text)
            except UnicodeDecodeError:
                self.add_error("instrument_file", "The file is not UTF-8 text.")
            except InstrumentError as exc:
                self.add_error("instrument_file", list(exc.errors))
        return data
