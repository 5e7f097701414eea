"""The radiologist survey (seed 003 Figure 5, appendix A.1-A.2), one module per concern, as
surveys/lay/ is for the layperson survey:

- `assignment.py` which sources a radiologist rates and in what order (their pages, created on
                  first visit);
- `progress.py`   where they stand: pages done, a page's number and neighbours, the list of all
                  pages, where to resume;
- `pages.py`      one page: what it shows (the original and every distinct simplification under blind
                  labels A, B, C…, each with the study's instrument's questions), which answers are
                  missing, and saving its form (autosave or a whole-page POST);
- `answers.py`    the writes of its answers (ratings of each text, judgements of the original);
- `controls.py`   planted controls: where they join a page and where their answers go.

Views (surveys/radiologist/views.py) stay thin: they parse the request and call one function here.
"""
