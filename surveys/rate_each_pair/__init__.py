"""The rate-each-pair flow (StudyInstrument.flow = "pairs", the stored value;
docs/guide/rate-each-pair-flow.md): seed 002's caption pairs rated on four criteria by radiologists
and a lay reader, seed 000's sentence matching and expert verification. One page per
(simplification, reference) pair, asking the items of the participant's rater group from the
study's current rate-each-pair instruments. Shaped as every flow of surveys/ is:

- `views.py`, `urls.py` the pages (thin);
- `selectors.py` what a study's rate-each-pair flow is: its instruments, a participant's rater group
                 and items, the pairs (what a pair's reference is), the participant's seeded order;
- `services.py`  attaching a preset to a study and inviting participants of a rater group;
- `pages.py`     one page's state (stored or posted answers, sentence splits), saving a page (all or
                 nothing, each item's error named), progress and resume.

Path: invite link → consent (the study's text for the role) → pages in the participant's order →
end page with the completion code. Templates: templates/surveys/rate_each_pair/; script and styles:
static/radlay/rate_each_pair.js, .css.
"""
