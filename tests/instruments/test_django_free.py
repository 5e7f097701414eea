"""instruments/ is one of the Django-free packages (docs/architecture/instruments.md): every module
imports where importing Django fails, and an answer's refusal is made and worded (in English, by
its code and parameters) there too; the survey flows translate it (annotation/item_questions.py)."""

from __future__ import annotations

import pytest

from tests.django_free import REPO, assert_imports_without_django

MODULES = sorted(
    ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for path in (REPO / "instruments").rglob("*.py")
)


def test_the_package_has_the_modules_it_is_expected_to():
    assert {"instruments.answers", "instruments.schema", "instruments.validation"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_without_django(module):
    assert_imports_without_django(module)


def test_a_refusal_is_made_and_worded_without_django():
    assert_imports_without_django(
        "instruments.answers",
        then=(
            "from instruments.presets import preset_load\n"
            "item = preset_load('protocol_003_layperson').item('understanding')\n"
            "try:\n"
            "    instruments.answers.item_value_validate(item, '9')\n"
            "except instruments.answers.InvalidAnswer as refused:\n"
            "    assert refused.code == 'not_a_point' and refused.params['value'] == 9\n"
            "    assert str(refused).startswith('understanding: 9 is not a point of the scale')\n"
            "else:\n"
            "    raise AssertionError('not refused')\n"
        ),
    )
