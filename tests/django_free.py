"""The check that a module imports no Django, for the Django-free packages' tests (lexicon, measures,
generation's pure cores): the module is imported in a fresh interpreter in which importing Django
fails, and Django must not be loaded afterwards either."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_BLOCK = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'django' or name.startswith('django.'):\n"
    "            raise ImportError('django is blocked')\n"
    "sys.meta_path.insert(0, Block())\n"
)


def assert_imports_without_django(module: str, then: str = "") -> None:
    """Import `module` (then run the statements `then`) where importing Django fails."""
    code = (
        f"{_BLOCK}import {module}\n{then}"
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
