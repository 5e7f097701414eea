"""API of sample-size plans: POST a request (the dashboard form's fields) to queue one, GET it
back when done. Researchers of the study only (another study is a 404)."""

from __future__ import annotations

from collections.abc import Mapping

from django import forms
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_study
from evaluation.models import PowerPlan
from evaluation.planning import plans
from evaluation.planning.forms import PlanForm

_FIELD_TYPES = {
    forms.ChoiceField: lambda f: serializers.ChoiceField(choices=f.choices, help_text=str(f.label or "")),
    forms.FloatField: lambda f: serializers.FloatField(required=f.required, help_text=f.help_text),
    forms.IntegerField: lambda f: serializers.IntegerField(
        required=f.required, help_text=f.help_text, min_value=f.min_value, max_value=f.max_value
    ),
}
# The schema of a plan request, derived from PlanForm (which alone validates it).
PlanRequestSerializer = type(
    "PlanRequestSerializer",
    (serializers.Serializer,),
    {
        name: _FIELD_TYPES[type(field)](field)
        for name, field in PlanForm.base_fields.items()
        if type(field) in _FIELD_TYPES
    },
)
PlanSerializer = type(
    "PlanSerializer",
    (serializers.Serializer,),
    {
        "id": serializers.IntegerField(),
        "url": serializers.CharField(),
        "status": serializers.ChoiceField(choices=PowerPlan.Status.choices),
        "outcome": serializers.CharField(),
        "parameters": serializers.JSONField(),
        "created_at": serializers.DateTimeField(),
        "finished_at": serializers.DateTimeField(allow_null=True),
        "error": serializers.CharField(),
        "result": serializers.JSONField(allow_null=True),
    },
)


def _plan_json(request: Request, plan: PowerPlan, *, with_result: bool) -> dict:
    result = None
    if with_result and plan.result:
        result = {k: v for k, v in plan.result.items() if k != "figure_svg"}
    return {
        "id": plan.pk,
        "url": request.build_absolute_uri(reverse("api:plan-detail", args=[plan.study.slug, plan.pk])),
        "status": plan.status,
        "outcome": plan.outcome,
        "parameters": plan.parameters,
        "created_at": plan.created_at,
        "finished_at": plan.finished_at,
        "error": plan.error,
        "result": result,
    }


class PlanListView(APIView):
    @extend_schema(responses=PlanSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        """The study's sample-size plans, newest first (without their results)."""
        study = access_study(user=request.user, slug=slug)
        rows = plans.plans_for_study(study=study).select_related("study")[:100]
        return Response([_plan_json(request, plan, with_result=False) for plan in rows])

    @extend_schema(
        request=PlanRequestSerializer,
        responses={202: PlanSerializer, 400: OpenApiTypes.OBJECT, 429: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Queue a plan: power of radlay's analysis over a grid of designs, simulated from this
        study's answers as the pilot. Poll the returned url until status is done or failed."""
        study = access_study(user=request.user, slug=slug, need="edit")
        if not isinstance(request.data, Mapping):  # a JSON list, number, string, true or null
            message = (
                "The request body must be a JSON object of the plan's fields, "
                'e.g. {"outcome": "understanding", "effect": 0.25}.'
            )
            return Response(
                {"errors": {"__all__": [{"message": message, "code": "invalid"}]}},
                status=status.HTTP_400_BAD_REQUEST,
            )
        form = PlanForm.with_defaults(request.data)
        if not form.is_valid():
            return Response({"errors": form.errors.get_json_data()}, status=status.HTTP_400_BAD_REQUEST)
        try:
            plan = plans.plan_create(study=study, parameters=form.cleaned_data, user=request.user)
        except plans.PlanLimitReached as limit:
            return Response(
                {"errors": {"__all__": [{"message": limit.message, "code": "limit"}]}},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
            )
        plan.refresh_from_db()
        return Response(_plan_json(request, plan, with_result=True), status=status.HTTP_202_ACCEPTED)


class PlanDetailView(APIView):
    @extend_schema(responses=PlanSerializer)
    def get(self, request: Request, slug: str, plan_id: int) -> Response:
        """One plan with its result once done: the pilot's variance components, the power of
        every design with Monte Carlo standard errors, and the smallest design meeting the target."""
        study = access_study(user=request.user, slug=slug)
        plan = plans.access_plan(study=study, plan_id=plan_id)
        return Response(_plan_json(request, plan, with_result=True))
