"""The statistics and metrics of a simplification study, without Django: interval methods, the
crossed-design models, agreement, correlations, comparisons, pairwise ranking and rater
reliability (`measures.stats`), and the text metrics — readability, reference-based, semantic,
jargon, diversity, erasure — with their registry (`measures.metrics`). The evaluation app, judging
and ml import them; they import none of those (tests/measures/test_django_free.py)."""
