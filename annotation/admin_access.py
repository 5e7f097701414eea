"""Scoping the admin to the researcher (18.2): a staff user who is researcher of one study sees,
filters, picks in forms and acts on that study's rows only; superusers see everything.

Every admin of a model that belongs to a study, directly or through relations, derives from
`StudyScopedAdmin` and names the path to the study. The same table tells foreign-key and
many-to-many form fields which choices to offer, so a dropdown never lists another study's rows."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Model, Q, QuerySet

from annotation.selectors import studies_for_user

# "app_label.ModelName" -> (lookup path from the model to its Study ("" for Study itself), whether
# rows without a study (nothing of any study's data) are shown to every staff user).
STUDY_PATHS: dict[str, tuple[str, bool]] = {
    "annotation.Study": ("", False),
    "annotation.Source": ("study", False),
    "annotation.System": ("study", False),
    "annotation.Simplification": ("source__study", False),
    "annotation.SimplificationText": ("source__study", False),
    "annotation.Participant": ("study", False),
    "annotation.ExpertItem": ("participant__study", False),
    "annotation.PlantedControl": ("study", False),
    "annotation.LayItem": ("participant__study", False),
    "annotation.ItemAnswer": ("participant__study", False),
    "annotation.AttentionCheck": ("study", False),
    "annotation.AttentionCheckResponse": ("participant__study", False),
    "annotation.ConsentRefusal": ("study", False),
    "annotation.ActivityEvent": ("study", False),
    "generation.GenerationBatch": ("study", False),
    "generation.GenerationJob": ("batch__study", False),
    "judging.JudgeRun": ("study", False),
    "judging.JudgeItem": ("run__study", False),
    "judging.JudgeAnswer": ("item__run__study", False),
    # Corpus-file training and registered base models belong to no study.
    "ml.TrainingJob": ("study", True),
    "ml.ModelArtifact": ("training_job__study", True),
}


def scope_to_user(queryset: QuerySet, user) -> QuerySet:
    """`queryset` narrowed to the rows of the studies `user` is researcher of (all for superusers).
    Models outside STUDY_PATHS pass through unchanged."""
    entry = STUDY_PATHS.get(queryset.model._meta.label)
    if entry is None or user.is_superuser:
        return queryset
    path, shared_when_empty = entry
    # Viewers may not change anything nor see identifying fields: the admin is for editors and
    # owners (and superusers).
    studies = studies_for_user(user=user, need="edit")
    if not path:
        return queryset.filter(pk__in=studies.values("pk"))
    condition = Q(**{f"{path}__in": studies.values("pk")})
    if shared_when_empty:
        condition |= Q(**{f"{path}__isnull": True})
    # Every path follows foreign keys towards the study, so the filter never repeats a row.
    return queryset.filter(condition)


def is_scoped(model: type[Model]) -> bool:
    return model._meta.label in STUDY_PATHS


def accounts_for_user(user) -> QuerySet:
    """The accounts `user` may pick as a study's researcher or a participant's login (all of them
    for superusers): themselves, the researchers and radiologist logins of their own studies, and
    accounts not yet in any study (a colleague or radiologist an administrator has just created).
    Superusers and the people of other studies are not listed. Everyone already linked to one of
    the user's studies is in it, so saving a form never drops a link the user could not see."""
    accounts = get_user_model()._default_manager.all()
    if user.is_superuser:
        return accounts
    studies = studies_for_user(user=user, need="edit").values("pk")
    unassigned = Q(studies__isnull=True, participations__isnull=True, is_superuser=False)
    return accounts.filter(
        Q(pk=user.pk) | Q(studies__in=studies) | Q(participations__study__in=studies) | unassigned
    ).distinct()


def _choices_for_user(model: type[Model], user) -> QuerySet | None:
    if model is get_user_model():
        return accounts_for_user(user)
    if is_scoped(model):
        return scope_to_user(model._default_manager.all(), user)
    return None


class ScopedRelatedFields:
    """Foreign-key and many-to-many form fields offer only rows of the user's studies, and only
    the accounts of `accounts_for_user`."""

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if (
            "queryset" not in kwargs
            and (choices := _choices_for_user(db_field.related_model, request.user)) is not None
        ):
            kwargs["queryset"] = choices
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if (
            "queryset" not in kwargs
            and (choices := _choices_for_user(db_field.related_model, request.user)) is not None
        ):
            kwargs["queryset"] = choices
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class StudyScopedAdmin(ScopedRelatedFields, admin.ModelAdmin):
    """A ModelAdmin whose changelist, change views, filters, actions and related-field choices hold
    only the user's studies. Use `admin.RelatedOnlyFieldListFilter` for relations in list_filter:
    it takes its choices from the scoped queryset."""

    def get_queryset(self, request):
        return scope_to_user(super().get_queryset(request), request.user)


class SuperuserOnlyAdmin(admin.ModelAdmin):
    """Shared caches whose rows hold study texts but name no study (the LLM call cache): only
    superusers may see them."""

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser
