"""`measures` (the statistics and metrics) imports no Django, so ml, judging, the bench scripts and a
notebook can use it without a configured project (issue 32)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import measures

REPO = Path(__file__).resolve().parents[2]
MODULES = sorted(m.name for m in pkgutil.walk_packages(measures.__path__, "measures."))


def test_every_module_is_listed():
    assert {"measures.stats.crossed", "measures.metrics.registry"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_imports_no_django(module):
    # A fresh interpreter in which importing django fails.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'django' or name.startswith('django.'):\n"
        "            raise ImportError('django is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"import {module}\n"
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
