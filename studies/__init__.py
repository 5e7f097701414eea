"""Setting a study up: studies, sources and systems, the team, study kinds and their instruments,
rater groups, the importers (study files, clinical reports, the authors' release), the Study admin
and its registry of other apps' actions and inlines, and the study management commands. The data
model itself is annotation's (annotation/models.py), under the surveys and the set-up alike."""
