"""The layperson survey (seed 003 Figure 1, section 5.4), shaped as every flow of surveys/ is, one
module per concern:

- `views.py`, `urls.py` the pages (thin);
- `services.py` writes: panel answers (with panel 1's lock), panel 3's preferences, the items;
- `selectors.py` what the study offers a layperson: the Latin square of sources × systems, the
                panels of an item, the safety gate, and which participants' rows are live;
- `assignment.py` the row handout: a newcomer's Latin-square row and survey items, and the gate
                re-applied to an item before it shows a text;
- `steps.py`    `lay_next_step(participant)`: where a participant is and goes next (every view and
                redirect asks it), and their progress;
- `panels.py`   one panel's state, parsing and saving, and the panel-1 lock ("panel 1 is locked once
                the simplification is shown");
- `entry.py`    consent and the recruitment link, background questions, attention checks and
                completion;
- `answers.py`  the writes of panel 1–2 answers and panel 3's preferences;
- `choices.py`  the panel-3 choices as rows, for the derived pairwise ranking and the exports;
- `errors.py`   the refusals the views answer with 4xx.

Path: consent → optional background questions → instructions → per source three panels (original;
original + the simplification the Latin square assigns; all simplifications) with the study's
attention checks in between → completion code.
"""
