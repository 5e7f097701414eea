"""A web worker starts without the scientific stack: pandas, scipy, scikit-learn, matplotlib and the
model libraries load where the analysis, the agreement, the plans and the figures are computed (a
task or a command), never because a page or the admin was imported. Three gunicorn workers would
otherwise each spend seconds and ~150 MB on libraries no survey page uses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "sklearn",
    "matplotlib",
    "torch",
    "transformers",
    "sentence_transformers",
    "krippendorff",
    "statsmodels",
    "nltk",
    "textstat",
)

# What a worker does before and on its first requests: the WSGI handler (django.setup() and the
# middleware), every URL pattern's view and the error handlers, the template engine with every
# app's template tags, and the Celery app that views send tasks through.
WORKER_START = """
import json, sys
from django.core.wsgi import get_wsgi_application
application = get_wsgi_application()
from django.template import engines
from django.urls import get_resolver

def views(patterns):
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            yield from views(pattern.url_patterns)
        else:
            yield pattern.callback

resolver = get_resolver()
n_views = sum(1 for _ in views(resolver.url_patterns))
for status in (400, 403, 404, 500):
    resolver.resolve_error_handler(status)
engines["django"].engine.template_libraries
from config import celery_app
celery_app.loader.import_default_modules()
print(json.dumps({"views": n_views, "loaded": sorted(m for m in HEAVY if m in sys.modules)}))
"""


@pytest.mark.heavy
def test_a_web_worker_starts_without_the_scientific_stack():
    code = f"HEAVY = {HEAVY!r}\n{WORKER_START}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["views"] > 50  # the URL patterns were walked, the included ones too
    assert result["loaded"] == [], f"imported by a web worker at start-up: {result['loaded']}"
