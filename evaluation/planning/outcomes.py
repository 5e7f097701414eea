"""The outcomes a follow-up study can be planned for.

An outcome is one number per (participant, source, system): a lay panel-2 answer (the system is
the one the Latin square assigned to that item) or a radiologist's rating of a system's text. Its
`design` says how a study collects it: "lay" — each participant sees a window of sources, one
system per source, by radlay's Latin square (measures/latin_square.py); "expert" — each
radiologist rates every system's text of every source. Its `kind` says how simulated answers are
drawn on the outcome's scale (see evaluation/planning/power.py). How each is read from a pilot's
answers is in evaluation/planning/outcome_frames.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation import scales


@dataclass(frozen=True)
class Outcome:
    key: str
    label: str
    design: str  # "lay" | "expert"
    kind: str  # "ordinal" (integer levels low..high) | "binary" (0/1) | "continuous" (clipped)
    low: float
    high: float


def _levels(scale: scales.Scale) -> tuple[float, float]:
    values = [level.value for level in scale.levels]
    return float(min(values)), float(max(values))


_U_LOW, _U_HIGH = _levels(scales.UNDERSTANDING)
_S_LOW, _S_HIGH = _levels(scales.SEVERITY)
_H_LOW, _H_HIGH = _levels(scales.HELPFULNESS)
_L_LOW, _L_HIGH = _levels(scales.LIKERT)

OUTCOMES: dict[str, Outcome] = {
    outcome.key: outcome
    for outcome in (
        Outcome(
            "understanding",
            "Understanding with the simplification (Q1, panel 2)",
            "lay",
            "ordinal",
            _U_LOW,
            _U_HIGH,
        ),
        Outcome(
            "understanding_gain",
            "Comprehension gain (Q1 panel 2 − panel 1, per item)",
            "lay",
            "ordinal",
            _U_LOW - _U_HIGH,
            _U_HIGH - _U_LOW,
        ),
        Outcome(
            "severity_accuracy", "Severity accuracy (Q3 = reference, panel 2)", "lay", "binary", 0.0, 1.0
        ),
        Outcome(
            "severity_squared_error",
            "Severity squared error (Q3 vs reference, panel 2)",
            "lay",
            "continuous",
            0.0,
            (_S_HIGH - _S_LOW) ** 2,
        ),
        Outcome("helpfulness", "Helpfulness (Q4)", "lay", "ordinal", _H_LOW, _H_HIGH),
        *(
            Outcome(f"expert_{aspect}", f"Radiologists' {aspect} (1–5)", "expert", "ordinal", _L_LOW, _L_HIGH)
            for aspect in scales.EXPERT_ASPECTS
        ),
    )
}


def get_outcome(key: str) -> Outcome:
    try:
        return OUTCOMES[key]
    except KeyError:
        raise ValueError(f"Unknown outcome {key!r}; choose one of: {', '.join(OUTCOMES)}.") from None
