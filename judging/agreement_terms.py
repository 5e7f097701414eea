"""What judge–human agreement compares: the answer fields, the scale they share and the statistics
reported for each. Plain constants, so the pages, the report and the leaderboard can name them
without loading the statistics libraries that judging.agreement computes with."""

RUBRIC_FIELDS = ("correctness", "completeness", "hallucination", "structure", "simplicity")
SOURCE_FIELDS = ("severity", "original_simplicity")
FIELDS = (*RUBRIC_FIELDS, *SOURCE_FIELDS)
SCALE = (1, 5)  # every compared field is on 1–5 (severity: Critical = 1 … Healthy = 5)
STATISTICS = ("alpha_ordinal", "alpha_interval", "kappa_quadratic", "icc", "spearman", "kendall")
