"""Survey instruments as data: the items a study asks, their wording per language, their scales and
codes, validated from YAML/JSON and fingerprinted per version. Django-free. Every survey flow asks
its study's instrument, every answer is stored by item (annotation.ItemAnswer), and the analysis
and the judges read the same items (docs/architecture/instruments.md)."""
