"""API of adjudication: GET the study's queue (most disagreement first; ?all=1 adds the decided
units), POST a consensus label. Members whose role allows adjudicating only (owner, editor,
adjudicator); the same service and refusals as the console page and `manage.py adjudicate`."""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_study
from evaluation.adjudication_selectors import adjudication_queue, unit_records
from evaluation.adjudication_services import MAX_TIME_SPENT_MS, REASONS, adjudication_record

_YES = frozenset({"1", "true", "yes", "on"})
AdjudicationRequestSerializer = type(
    "AdjudicationRequestSerializer",
    (serializers.Serializer,),
    {
        "unit": serializers.CharField(help_text="the unit's token, from the queue"),
        "value": serializers.JSONField(help_text="the consensus value, as the item takes it"),
        "reason": serializers.ChoiceField(choices=REASONS.choices),
        "guideline_gap": serializers.BooleanField(required=False),
        "note": serializers.CharField(required=False, allow_blank=True),
        "time_spent_ms": serializers.IntegerField(required=False, min_value=0, max_value=MAX_TIME_SPENT_MS),
    },
)


def _errors(exc: ValidationError) -> dict:
    return {
        "errors": {
            field: [{"message": message, "code": "invalid"} for message in messages]
            for field, messages in exc.message_dict.items()
        }
    }


class AdjudicationQueueView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("all", OpenApiTypes.BOOL, description="also the units already adjudicated")
        ],
        responses=OpenApiResponse({"type": "array", "items": {"type": "object"}}, description="the queue"),
    )
    def get(self, request: Request, slug: str) -> Response:
        """The units whose raters disagree, most disagreement first, their answers blind (Rater 1,
        Rater 2, …) with their justifications."""
        study = access_study(user=request.user, slug=slug, need="adjudicate")
        decided = str(request.query_params.get("all", "")).strip().lower() in _YES
        units = adjudication_queue(study=study, include_decided=decided)
        return Response(unit_records(study=study, units=units))

    @extend_schema(
        request=AdjudicationRequestSerializer,
        responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Record (or revise) the consensus of one unit."""
        study = access_study(user=request.user, slug=slug, need="adjudicate")
        data = request.data
        if not isinstance(data, Mapping):
            message = (
                'The request body must be a JSON object, e.g. {"unit": "…", "value": 4, "reason": "misread"}.'
            )
            return Response({"errors": {"__all__": [{"message": message, "code": "invalid"}]}}, status=400)
        missing = [name for name in ("unit", "value", "reason") if name not in data]
        if missing:
            return Response(
                {
                    "errors": {
                        name: [{"message": f"{name}: required", "code": "required"}] for name in missing
                    }
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            label = adjudication_record(
                study=study,
                unit=str(data["unit"]),
                value=data["value"],
                reason=str(data["reason"]),
                guideline_gap=bool(data.get("guideline_gap", False)),
                note=str(data.get("note") or ""),
                time_spent_ms=data.get("time_spent_ms", 0),
                adjudicator=request.user,
            )
        except ValidationError as exc:
            return Response(_errors(exc), status=status.HTTP_400_BAD_REQUEST)
        return Response(
            {
                "unit": data["unit"],
                "value": label.value,
                "score": label.score,
                "reason": label.reason,
                "guideline_gap": label.guideline_gap,
                "disagreement": label.disagreement,
                "raters": label.raters,
            },
            status=status.HTTP_201_CREATED,
        )
