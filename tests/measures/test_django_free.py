"""`measures` (the statistics and metrics) imports no Django, so ml, judging, the bench scripts and a
notebook can use it without a configured project."""

from __future__ import annotations

import pkgutil

import pytest

import measures
from tests.django_free import assert_imports_without_django

MODULES = sorted(m.name for m in pkgutil.walk_packages(measures.__path__, "measures."))


def test_every_module_is_listed():
    assert {"measures.stats.crossed", "measures.metrics.registry"} <= set(MODULES)


@pytest.mark.heavy
@pytest.mark.parametrize("module", MODULES)
def test_imports_no_django(module):
    assert_imports_without_django(module)
