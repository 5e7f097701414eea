"""The top-level keys of a protocol study's analysis document that the API documents and readers
rely on: one list for the tests of the computation and of the API."""

ANALYSIS_KEYS = (
    "study",
    "systems",
    "readability",
    "expert",
    "lay",
    "confidence_vs_accuracy",
    "preferences",
    "agreement",
    "severity_distribution",
    "correlations",
    "confidence_intervals",
    "comparisons",
    "metrics",
)
