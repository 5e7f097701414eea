"""The surveys participants take, one package per flow, each of the same shape (`views.py`,
`urls.py`, `services.py`, `selectors.py`, its templates under templates/surveys/<flow>/ and its
static file static/radlay/<flow>.js): `radiologist/`, `lay/`, `rate_each_pair/` and `compare_two/`.
Shared by all four: `entry.py` (the token's way in), `errors.py` (the survey's error pages),
`survey_page.py`, `survey_fragments.py`, `survey_language.py`, `enrolment_limits.py` and
`urls.py` (namespace "surveys"). Answers are written through annotation's one answer store."""
