"""Survey instruments as data (issue 30): the items a study asks, their wording per language, their
scales and codes, validated from YAML/JSON and fingerprinted per version. Django-free: the survey
flows, answer storage, analysis and judges are not yet driven by it (docs/architecture/instruments.md)."""
