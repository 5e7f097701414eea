"""The parts of Presidio radlay's analyzer uses, imported without the model stacks it does not use.

Presidio's package imports transformers (for its transformers NLP engine) and torch (spaCy's
thinc, and Presidio's device detection) whenever they are installed: seven seconds and more of a
process's first de-identification, and on a GPU machine a CUDA context in a web process. The
analyzer here runs with the `NoOpNlpEngine` and recognizers that need no model (engine.py), so
while Presidio is imported the two are hidden from it, unless this process has loaded them
already; once it is imported they import as usual. Presidio then takes them for absent: its
transformers engine and spaCy's torch layers are unusable in this process, and nothing here
uses them. Every module of this package imports Presidio's names from here."""

from __future__ import annotations

import sys

_HIDDEN = [name for name in ("torch", "transformers") if name not in sys.modules]
for _name in _HIDDEN:
    sys.modules[_name] = None  # type: ignore[assignment]  # `import` raises ImportError
try:
    from presidio_analyzer import (
        AnalysisExplanation,
        AnalyzerEngine,
        EntityRecognizer,
        RecognizerRegistry,
        RecognizerResult,
    )
    from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
    from presidio_analyzer.nlp_engine import NlpArtifacts, NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        DateRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )
finally:
    for _name in _HIDDEN:
        if sys.modules.get(_name, False) is None:
            del sys.modules[_name]

__all__ = [
    "AnalysisExplanation",
    "AnalyzerEngine",
    "ContextAwareEnhancer",
    "DateRecognizer",
    "EntityRecognizer",
    "IpRecognizer",
    "NlpArtifacts",
    "NoOpNlpEngine",
    "PhoneRecognizer",
    "RecognizerRegistry",
    "RecognizerResult",
    "UsSsnRecognizer",
]
