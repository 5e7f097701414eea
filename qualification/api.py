"""GET /api/studies/<slug>/qualification/: every participant's qualification round (read-only, the
same rows as the progress page and `manage.py qualification results`). Pseudonymous: participants
are named by their label, never by a recruiter's id."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_study
from qualification.selectors import qualification_results


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    correct = serializers.IntegerField(help_text="practice items within tolerance")
    total = serializers.IntegerField()
    seconds = serializers.FloatField(allow_null=True, help_text="how long the attempt took")
    passed = serializers.BooleanField(allow_null=True, help_text="null while the attempt is open")


class QualificationResultSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="pseudonym")
    role = serializers.CharField()
    group = serializers.CharField(help_text="the rater group the round was asked of")
    flow = serializers.CharField()
    state = serializers.CharField(
        help_text="passed, flagged (failed, went on flagged), failed (screened out), due (practising)"
    )
    needed = serializers.IntegerField(allow_null=True, help_text="correct answers an attempt needs")
    passed_at = serializers.DateTimeField(allow_null=True)
    attempts = AttemptSerializer(many=True)


def result_rows(results) -> list[dict]:
    return [
        {
            "participant": r.pseudonym,
            "role": r.role,
            "group": r.group,
            "flow": r.flow,
            "state": r.state,
            "needed": r.last_needed,
            "passed_at": r.passed_at,
            "attempts": [
                dict(zip(("number", "correct", "total", "seconds", "passed"), score, strict=True))
                for score in r.scores
            ],
        }
        for r in results
    ]


class QualificationResultsView(APIView):
    @extend_schema(responses=QualificationResultSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        """Who passed the study's qualification round, who failed, and how: each attempt's score
        and time."""
        study = access_study(user=request.user, slug=slug)
        return Response(
            QualificationResultSerializer(result_rows(qualification_results(study=study)), many=True).data
        )
