"""The survey scales, as participants see them (PROTOCOL.md, from seed 003 Figure 1 / appendix A.2
and the raw survey exports). Answers are stored by level name; numbers are given here, once, for
analysis and exports. Django-free."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Level:
    name: str
    value: int
    definition: str = ""


@dataclass(frozen=True)
class Scale:
    key: str
    question: str
    levels: tuple[Level, ...]

    @property
    def names(self) -> list[str]:
        return [level.name for level in self.levels]

    def value_of(self, name: str | None) -> int | None:
        if name is None or name == "":
            return None
        for level in self.levels:
            if level.name == name:
                return level.value
        raise KeyError(f"{name!r} is not a level of {self.key} ({', '.join(self.names)})")

    @property
    def codes(self) -> dict[str, int]:
        """Level name → its number in radlay's coding."""
        return {level.name: level.value for level in self.levels}

    def choices(self) -> list[tuple[str, str]]:
        return [(level.name, level.name) for level in self.levels]

    @property
    def lowest(self) -> int:
        return min(level.value for level in self.levels)

    @property
    def highest(self) -> int:
        return max(level.value for level in self.levels)


# Seed 003 appendix A.2. Coding: Critical = 1 … Healthy = 5 (footnote 2 of seed 003 and the
# release's Severity_ratings file). The appendix numbers them the other way round; MSE and
# accuracy are unaffected, and every export states this coding.
SEVERITY = Scale(
    key="severity",
    question="Make your best guess about the severity of the described medical condition.",
    levels=(
        Level(
            "Critical",
            1,
            "Describes a medical condition that poses a threat to a person's life. "
            "A critical condition requires urgent care and close monitoring.",
        ),
        Level(
            "Serious",
            2,
            "Describes a condition that requires medical attention but is not immediately "
            "life-threatening. Treatment may involve hospitalization, medication, or other interventions.",
        ),
        Level(
            "Moderate",
            3,
            "Describes a condition that is not severe but may require medical attention and "
            "treatment. The condition may cause discomfort or affect a person's ability to carry out normal "
            "activities.",
        ),
        Level(
            "Mild",
            4,
            "Describes a condition that is not serious. The condition may cause minor discomfort "
            "or inconvenience but is unlikely to have a significant impact on a person's overall health.",
        ),
        Level(
            "Healthy", 5, "Findings that are considered normal or benign with no significant abnormalities."
        ),
    ),
)

UNDERSTANDING = Scale(
    key="understanding",
    question="You understand the meaning of the sentence.",
    levels=(
        Level("Not at all", 1),
        Level("Some parts of it", 2),
        Level("Most of it", 3),
        Level("Completely", 4),
    ),
)

CONFIDENCE = Scale(
    key="confidence",
    question="Can you guess the level of severity of the medical condition described in the sentence?",
    levels=(Level("Not at all", 1), Level("With low confidence", 2), Level("With high confidence", 3)),
)

URGENCY_CONFIDENCE = Scale(
    key="urgency_confidence",
    question="Can you guess the medical urgency of the condition described in the sentence?",
    levels=CONFIDENCE.levels,
)

HELPFULNESS = Scale(
    key="helpfulness",
    question="Has the simplified sentence improved your understanding of the original sentence?",
    levels=(
        Level("It further confused me", -1),
        Level("It did not help", 0),
        Level("I understand slightly better", 1),
        Level("I understand much better", 2),
    ),
)

# Radiologist rubric (seed 003 Figure 5 / appendix A.1): 1-5 Likert per aspect. The one place its
# bounds are written: the answer check (annotation.answer_writes) and the database's range checks
# (annotation.models) read LIKERT.lowest and LIKERT.highest.
LIKERT = Scale(
    key="likert",
    question="1 - strongly disagree, 2 - disagree, 3 - neutral, 4 - agree, 5 - strongly agree.",
    levels=(
        Level("strongly disagree", 1),
        Level("disagree", 2),
        Level("neutral", 3),
        Level("agree", 4),
        Level("strongly agree", 5),
    ),
)

EXPERT_ASPECTS: dict[str, str] = {
    "correctness": "All information in the simplification is medically correct.",
    "completeness": "The simplification must retain all the essential information of the original "
    "radiology sentence.",
    "hallucination": "The simplified sentence should not introduce any harmful or misleading "
    "interpretations that are not in the original sentence.",
    "structure": "The simplification must include clear descriptions of 1) body parts, 2) the findings "
    "(such as masses, injuries, stones, swelling), and 3) what these findings indicate (for "
    "instance, benign conditions, unclear diagnoses, indications of severity).",
    "simplicity": "From your personal perspective, the simplification is simple enough for laypeople to "
    "understand.",
}
ORIGINAL_SIMPLICITY_QUESTION = "Do you think laypeople can understand the sentence?"

LAY_SCALES: dict[str, Scale] = {
    "understanding": UNDERSTANDING,
    "confidence": CONFIDENCE,
    "urgency_confidence": URGENCY_CONFIDENCE,
    "severity_guess": SEVERITY,
    "helpfulness": HELPFULNESS,
}
# The lay questions of panels 1 and 2 by their stored name (the item keys of the lay instrument,
# the export columns), in the survey's order, with the number participants see (seed 003 Figure 1; Q2b is the
# original survey's optional urgency question).
LAY_QUESTION_NUMBERS: dict[str, str] = {
    "understanding": "Q1",
    "confidence": "Q2",
    "urgency_confidence": "Q2b",
    "severity_guess": "Q3",
    "helpfulness": "Q4",
}
LAY_QUESTIONS: tuple[str, ...] = tuple(LAY_QUESTION_NUMBERS)

PREFERENCE_MOST_QUESTION = (
    "Which simplifications do you like the most? (you can select more than one sentence)"
)
PREFERENCE_LEAST_QUESTION = (
    "Which simplifications do you like the least? (you can select more than one sentence)"
)
JUSTIFICATION_QUESTION = "Please provide your justification."
PREFERENCE_QUESTION_NUMBERS = {"most": "Q5", "least": "Q6"}
