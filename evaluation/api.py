"""Read-only research API (DRF): studies, sources, systems, simplifications, progress, answers,
analysis, audit and exports. Token or session authentication; every view narrows to the studies
the user may see through `access_study` (another researcher's study is a 404)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_study
from annotation.models import Simplification, Source, Study, System
from annotation.selectors import counted_participants, studies_for_user
from evaluation import serializers
from evaluation.analysis.audit import audit_shipped, reported_files
from evaluation.api_pagination import bounded_int, cursor_payload, cursor_text
from evaluation.exports import FORMATS
from evaluation.exports.items import LAYOUTS as ITEM_LAYOUTS
from evaluation.exports.items import LayoutError
from evaluation.exports.keyset_pages import AnswerPosition, answer_page, position_of
from evaluation.exports.request_options import include_external_ids_asked, originals_asked
from evaluation.exports.response import export_response, item_export_response
from evaluation.exports.rows import answer_columns
from evaluation.pages.context import RETRY_AFTER_SECONDS, analysis_document
from evaluation.progress import participants_progress
from evaluation.selectors import analysis_snapshot_get, snapshot_analysis, snapshot_analysis_json
from evaluation.services import SnapshotState, analysis_snapshot_refresh, analysis_snapshot_wait
from privacy.selectors import sources_with_export_text
from signin.second_factor_services import api_token_second_factor_missing

MAX_ANSWERS_PAGE = 5000
LOCKED_OUT = "Too many failed logins for this account from your address; try again later."


class TokenView(ObtainAuthToken):
    """DRF's token view with the API's throttles (DRF's opts out of them), and a locked-out
    account answered 429 like the login pages: django-axes refuses the login inside the
    serializer, which DRF would report as a plain 400 "unable to log in"."""

    def get_throttles(self) -> list:
        return [throttle() for throttle in APIView.throttle_classes]

    def post(self, request: Request, *args, **kwargs) -> Response:
        serializer = self.get_serializer(data=request.data)
        try:
            serializer.is_valid(raise_exception=True)
        except ValidationError:
            if getattr(request, "axes_locked_out", False):
                return Response({"detail": LOCKED_OUT}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            raise
        user = serializer.validated_data["user"]
        # RADLAY_MFA_REQUIRED: a researcher's password alone does not get a token.
        code = request.data.get("otp", "") if isinstance(request.data, dict) else ""
        refusal = api_token_second_factor_missing(user=user, code=str(code))
        if refusal:
            return Response({"otp": [refusal]}, status=status.HTTP_400_BAD_REQUEST)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


class StudyListView(generics.ListAPIView):
    """The studies you are a researcher of."""

    serializer_class = serializers.StudySerializer

    def get_queryset(self):
        return (
            studies_for_user(user=self.request.user)
            .annotate(
                n_sources=Count("sources", distinct=True),
                n_systems=Count("systems", distinct=True),
                n_participants=Count(
                    "participants", filter=counted_participants(path="participants__"), distinct=True
                ),
            )
            .order_by("-created_at")
        )


class StudyDetailView(generics.RetrieveAPIView):
    serializer_class = serializers.StudySerializer
    lookup_field = "slug"

    def get_queryset(self):
        return StudyListView.get_queryset(self)


class _StudyChildList(generics.ListAPIView):
    def study(self) -> Study:
        return access_study(user=self.request.user, slug=self.kwargs["slug"])


class SourceListView(_StudyChildList):
    serializer_class = serializers.SourceSerializer

    def get_queryset(self):
        # De-identified text (privacy/) unless an owner asks for the originals (?originals=1,
        # recorded in the activity log).
        study = self.study()
        sources = Source.objects.filter(study=study).order_by("position")
        originals = originals_asked(self.request.query_params)
        if originals:
            from privacy.services import originals_release_record

            originals_release_record(study=study, actor=self.request.user, purpose="API source list")
        return sources_with_export_text(sources, originals=originals)


class SystemListView(_StudyChildList):
    serializer_class = serializers.SystemSerializer
    pagination_class = None

    def get_queryset(self):
        return System.objects.filter(study=self.study()).order_by("position", "key")


class SimplificationListView(_StudyChildList):
    serializer_class = serializers.SimplificationSerializer

    def get_queryset(self):
        return (
            Simplification.objects.filter(source__study=self.study())
            .select_related("source", "system", "shown_text")
            .order_by("source__position", "system__position", "system__key")
        )


class ProgressView(APIView):
    @extend_schema(responses=serializers.ParticipantProgressSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        """Every participant's progress: units done / total and status."""
        study = access_study(user=request.user, slug=slug)
        return Response(
            serializers.ParticipantProgressSerializer(participants_progress(study=study), many=True).data
        )


class AnswerListView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MAX_ANSWERS_PAGE, "default": 100},
                description=f"rows per page (1 to {MAX_ANSWERS_PAGE})",
            ),
            OpenApiParameter(
                "cursor",
                str,
                description="where the page starts: taken from the `next` or `previous` link of a "
                "page (opaque); without it, the first page",
            ),
        ],
        responses=serializers.AnswerPageSerializer,
    )
    def get(self, request: Request, slug: str) -> Response:
        """Raw answers in the export's long format (pseudonymous) and order, a page at a time;
        `next` and `previous` link the neighbouring pages (cursor pagination: any page costs
        the same, and rows answered meanwhile never shift a page onto rows already seen)."""
        study = access_study(user=request.user, slug=slug)
        params = request.query_params
        limit = bounded_int(
            params.get("limit"), name="limit", default=100, minimum=1, maximum=MAX_ANSWERS_PAGE
        )
        if "offset" in params:
            raise ValidationError(
                {"offset": "answers are paged by cursor: follow the `next` link of the first page."}
            )
        start, before = None, False
        if params.get("cursor"):
            start, before = _answer_cursor(params["cursor"], study=study)
        page = answer_page(study=study, limit=limit, start=start, before=before)
        columns = answer_columns()
        base = request.build_absolute_uri(request.path)

        def link(position: AnswerPosition | None, *, backward: bool) -> str | None:
            if position is None:
                return None
            cursor = cursor_text([position.section, list(position.key), position.n, backward])
            return f"{base}?{urlencode({'limit': limit, 'cursor': cursor})}"

        return Response(
            {
                "next": link(page.next, backward=False),
                "previous": link(page.previous, backward=True),
                "results": [dict(zip(columns, row, strict=True)) for row in page.rows],
            }
        )


def _answer_cursor(raw: str, *, study: Study) -> tuple[AnswerPosition, bool]:
    payload = cursor_payload(raw)
    try:
        section, key, n, backward = payload
        if not isinstance(backward, bool):
            raise ValueError("no direction")
        return position_of(study=study, section=section, key=key, n=n), backward
    except (TypeError, ValueError):
        raise ValidationError({"cursor": "is not a cursor of this list."}) from None


def _snapshot_about(state: SnapshotState) -> dict:
    """What the API says of a snapshot's state: when it was computed and what it covers, whether
    and since when a recomputation runs, and why the last one failed."""
    snapshot = state.snapshot
    return {
        "computed_at": snapshot.computed_at if snapshot else None,
        "n_answers": snapshot.n_answers if snapshot else 0,
        "last_answer_at": snapshot.last_answer_at if snapshot else None,
        "duration_s": snapshot.duration_s if snapshot else None,
        "recomputing": state.recomputing,
        "recomputing_since": snapshot.requested_at if snapshot and state.recomputing else None,
        "stale": state.stale,
        "answers_since": state.answers_since,
        "checking": state.checking,
        "error": snapshot.error if snapshot else "",
        "error_at": snapshot.error_at if snapshot else None,
        "send_error": snapshot.send_error if snapshot and state.recomputing else "",
        "worker_lost": state.lease_lapsed,
        "no_worker_since": (
            state.worker_silence.seen_at if state.worker_silence and state.worker_silence.seen_at else None
        ),
        "no_worker": state.worker_silence is not None,
    }


class AnalysisView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "fresh",
                bool,
                description="ask for an analysis computed after this request and wait for it (up to "
                "RADLAY_ANALYSIS.fresh_timeout seconds, 5 by default, one such request at a time); "
                "202 when it is not ready by then: poll the Location",
            )
        ],
        responses={
            200: serializers.AnalysisSerializer,
            202: OpenApiResponse(
                description="no analysis yet (or not within the wait): it is being computed; "
                "`snapshot` says since when and why the last computation failed, if it did"
            ),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        """The study's latest analysis snapshot (the document `manage.py analyze --json` writes,
        plus `snapshot`: when it was computed and what it covers). It is recomputed by a task when
        answers change; `?fresh=1` asks for a new one and waits a few seconds for it."""
        study = access_study(user=request.user, slug=slug)
        fresh = request.query_params.get("fresh", "").lower() in {"1", "true", "yes"}
        asked = timezone.now()
        state = analysis_snapshot_refresh(study=study, force=fresh)
        snapshot = state.snapshot
        if fresh:
            snapshot = analysis_snapshot_wait(
                study=study, after=asked, timeout=settings.RADLAY_ANALYSIS.fresh_timeout
            )
            state = analysis_snapshot_refresh(study=study)
        if snapshot is None or state.snapshot is None or state.snapshot.result is None:
            # Polled without ?fresh: the latest snapshot, whose computed_at says whether it is the
            # one asked for.
            return Response(
                {
                    "detail": "The analysis is being computed; try again shortly.",
                    "snapshot": _snapshot_about(state),
                },
                status=status.HTTP_202_ACCEPTED,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS), "Location": request.path},
            )
        snapshot = state.snapshot
        about = _snapshot_about(state)
        if isinstance(request.accepted_renderer, JSONRenderer):
            # The stored sections as they are (megabytes at study scale), not decoded and rendered
            # again: the same document as the renderer's, in a fraction of the time.
            text = snapshot_analysis_json(
                snapshot, extra={"snapshot": about}, encoder=JSONRenderer.encoder_class
            )
            return HttpResponse(text, content_type="application/json")
        analysis = snapshot_analysis(analysis_snapshot_get(study=study, details=True))
        assert analysis is not None  # the snapshot checked above has its result
        return Response({**analysis, "snapshot": about})


class AuditView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "reported", str, description="name of a shipped reported-figures file", default="seed003"
            )
        ],
        responses=serializers.AuditSerializer,
    )
    def get(self, request: Request, slug: str) -> Response:
        """The study's figures next to those a paper reported (see evaluation/analysis/reported/)."""
        study = access_study(user=request.user, slug=slug)
        name = request.query_params.get("reported", "seed003")
        files = reported_files()
        if name not in files:
            raise NotFound(f"no reported-figures file {name!r}; known: {', '.join(files)}")
        analysis = analysis_document(study=study)
        if analysis is None:
            return Response(
                {"detail": "The analysis is being computed; try again shortly."},
                status=status.HTTP_202_ACCEPTED,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        return Response(audit_shipped(analysis, name))


class _FirstRenderer(BaseContentNegotiation):
    """The file's type is chosen by the URL, not by Accept: errors are JSON, files what they are."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


FORMAT_PARAMETER = OpenApiParameter("file_format", str, OpenApiParameter.PATH, enum=sorted(FORMATS))
EXTERNAL_IDS_PARAMETER = OpenApiParameter(
    "include_external_ids", bool, description="add recruiters' ids (personal data; owners and editors only)"
)


def _export_request(request: Request, slug: str, file_format: str) -> tuple[Study, bool]:
    """The study of an export request (the role rule), its format checked, and whether it asks
    for the external ids (`include_external_ids`)."""
    study = access_study(user=request.user, slug=slug)
    if file_format not in FORMATS:
        raise NotFound(f"unknown format {file_format!r}; use one of {', '.join(sorted(FORMATS))}")
    return study, include_external_ids_asked(request.query_params)


class ExportView(APIView):
    content_negotiation_class = _FirstRenderer

    @extend_schema(
        parameters=[
            FORMAT_PARAMETER,
            EXTERNAL_IDS_PARAMETER,
        ],
        responses={
            (200, exporter.CONTENT_TYPE.split(";")[0]): OpenApiResponse(
                serializers.AnswerSerializer(many=True) if name == "json" else OpenApiTypes.BINARY,
                description=f"the {name.upper()} file, streamed (JSON: the answers as typed, plus "
                "external_id when asked for)",
            )
            for name, exporter in sorted(FORMATS.items())
        },
    )
    def get(self, request: Request, slug: str, file_format: str) -> StreamingHttpResponse:
        """Every raw answer as CSV, XLSX or JSON (one row per answer), streamed."""
        study, asked = _export_request(request, slug, file_format)
        return export_response(
            study=study, file_format=file_format, include_external_ids=asked, user=request.user
        )


class ItemExportView(APIView):
    content_negotiation_class = _FirstRenderer

    @extend_schema(
        parameters=[
            FORMAT_PARAMETER,
            OpenApiParameter(
                "layout",
                str,
                enum=list(ITEM_LAYOUTS),
                default="long",
                description="long: one row per answer; wide: one row per participant × target, "
                "one column per item; spans: one row per error span marked (humans and judges), "
                "a text seen without marks as one row with empty span fields; suggestions: one row "
                "per AI-assisted span suggestion offered (judge or planted) with the rater's fate; "
                "final_labels: one row per item and target with the raters' values, the final label "
                "and its provenance (single rater, agreement, adjudicated, unresolved)",
            ),
            EXTERNAL_IDS_PARAMETER,
        ],
        responses={
            (200, exporter.CONTENT_TYPE.split(";")[0]): OpenApiResponse(
                # JSON: a list of answer records (long), of participant × target rows (wide) or of
                # span records (spans).
                OpenApiTypes.BINARY if name != "json" else {"type": "array", "items": {"type": "object"}},
                description=f"the instrument-item answers as {name.upper()}, streamed",
            )
            for name, exporter in sorted(FORMATS.items())
        },
    )
    def get(self, request: Request, slug: str, file_format: str) -> StreamingHttpResponse:
        """The answers to instrument items (evaluation/exports/items.py), long or wide, streamed."""
        study, asked = _export_request(request, slug, file_format)
        try:
            return item_export_response(
                study=study,
                file_format=file_format,
                layout=request.query_params.get("layout", "long"),
                include_external_ids=asked,
                user=request.user,
            )
        except LayoutError as exc:
            raise ValidationError({"layout": [str(exc)]}) from None
