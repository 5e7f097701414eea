"""The Study admin is annotation's one StudyAdmin, composed from the actions and inlines that other
apps register (studies.admin_extensions), whatever the order of INSTALLED_APPS."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin import TabularInline

from annotation.models import Source, Study
from studies import admin_extensions
from studies.admin import StudyAdmin


def test_the_registered_study_admin_is_annotations_with_every_apps_actions():
    model_admin = admin.site.get_model_admin(Study)
    assert type(model_admin) is StudyAdmin
    names = [getattr(action, "__name__", action) for action in model_admin.actions]
    own = [getattr(action, "__name__", action) for action in StudyAdmin.own_actions]
    assert own[:2] == ["open_studies", "close_studies"]
    assert names == [*own, "generate_simplifications", "judge_study", "plant_controls"]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_the_order_of_registration_decides_nothing(monkeypatch, order):
    monkeypatch.setattr(admin_extensions, "_ACTIONS", {})
    monkeypatch.setattr(admin_extensions, "_INLINES", {})

    def first(modeladmin, request, queryset):
        pass

    def second(modeladmin, request, queryset):
        pass

    class SourceInline(TabularInline):
        model = Source

    actions = (first, second)
    for index in order:
        admin_extensions.study_admin_action_add(actions[index])
    admin_extensions.study_admin_inline_add(SourceInline)
    model_admin = admin.site.get_model_admin(Study)
    assert model_admin.actions == [*StudyAdmin.own_actions, first, second]
    assert model_admin.inlines[-1] is SourceInline
    assert len(model_admin.inlines) == 3
