"""The radiologist survey (seed 003 Figure 5, appendix A.1-A.2), shaped as every flow of surveys/ is:

- `views.py`, `urls.py` the pages (thin: parse the request, call one function here);
- `services.py`   writes: ratings of each text, judgements of the original, the pages a radiologist
                  is given;
- `selectors.py`  where they stand: pages done, a page's number and neighbours, the list of all
                  pages, where to resume;
- `assignment.py` which sources a radiologist rates and in what order (their pages, created on
                  first visit);
- `controls.py`   planted controls on a page;
- `pages.py`      one page: what it shows (the original and every distinct simplification under blind
                  labels A, B, C…, each with the study's instrument's questions), which answers are
                  missing, and saving its form (autosave or a whole-page POST); `page_rows.py`
                  the shape a page is read in, `span_marks.py` its error-span questions.

Templates: templates/surveys/radiologist/; script and styles: static/radlay/radiologist.js, .css.
"""
