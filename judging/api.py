"""Judge runs in the research API: list and launch a study's judge runs, read one run with its
progress and agreement, download the judge answers (CSV). Reading needs access to the study
(access_study); launching also needs staff, as in the admin."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_study
from judging import selectors, services
from judging.models import JudgeRun
from judging.prompts.registry import DEFAULT_VERSION
from judging.views import judge_answers_response
from work.launch_bounds import MAX_CONCURRENCY, MAX_TOKENS, SEED_MAX, SEED_MIN


class JudgeRunLaunchSerializer(serializers.Serializer):
    backend = serializers.ChoiceField(choices=JudgeRun.Backend.values)
    model = serializers.CharField(required=False, allow_blank=True, default="")
    samples = serializers.IntegerField(required=False, default=1, min_value=1, max_value=services.MAX_SAMPLES)
    # The protocol's judges (radiologist, lay) or the key of an instrument the study asks; the
    # service names an unknown one under "instruments".
    instruments = serializers.ListField(
        child=serializers.SlugField(),
        required=False,
        default=["radiologist", "lay"],
    )
    temperature = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)
    max_tokens = serializers.IntegerField(
        required=False, allow_null=True, default=256, min_value=1, max_value=MAX_TOKENS
    )
    seed = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=SEED_MIN, max_value=SEED_MAX
    )
    prompt_version = serializers.CharField(required=False, default=DEFAULT_VERSION)
    concurrency = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=MAX_CONCURRENCY
    )


def run_payload(run: JudgeRun, *, with_agreement: bool = False) -> dict:
    data = {
        "id": run.pk,
        **selectors.judge_identity(run),
        "instruments": run.instruments,
        "parameters": run.parameters,
        "concurrency": run.concurrency,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "progress": selectors.run_progress(run=run).as_dict(),
        "agreement_computed_at": run.agreement_computed_at,
        "summary": (run.agreement or {}).get("summary"),
    }
    if with_agreement:
        data["agreement"] = run.agreement
    return data


class JudgeRunListView(APIView):
    @extend_schema(
        operation_id="judge_runs_list",
        responses={200: OpenApiResponse({"type": "array", "items": {"type": "object"}})},
    )
    def get(self, request: Request, slug: str) -> Response:
        """The study's judge runs with progress and agreement summary (the leaderboard's inputs)."""
        study = access_study(user=request.user, slug=slug)
        return Response([run_payload(run) for run in selectors.runs_of_study(study=study)])

    @extend_schema(
        operation_id="judge_run_launch",
        request=JudgeRunLaunchSerializer,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Launch a judge run (an owner or editor of the study, as on the console's launch page)."""
        study = access_study(user=request.user, slug=slug, need="edit")
        form = JudgeRunLaunchSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        values = dict(form.validated_data)
        try:
            run = services.judge_run_create(
                study=study, model_name=values.pop("model"), created_by=request.user, **values
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from None
        return Response(run_payload(run), status=status.HTTP_201_CREATED)


class JudgeRunDetailView(APIView):
    @extend_schema(operation_id="judge_run_retrieve", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, run_id: int) -> Response:
        """One judge run with its whole agreement document."""
        study = access_study(user=request.user, slug=slug)
        run = JudgeRun.objects.filter(study=study, pk=run_id).first()
        if run is None:
            raise NotFound("No such judge run in this study.")
        return Response(run_payload(run, with_agreement=True))


class JudgeAnswerExportView(APIView):
    @extend_schema(
        operation_id="judge_answers_csv",
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.BINARY, description="CSV, streamed")},
    )
    def get(self, request: Request, slug: str):
        """Every judge item of the study as CSV (separate from the human answers' export)."""
        study = access_study(user=request.user, slug=slug)
        return judge_answers_response(slug=slug, study=study, user=request.user)
