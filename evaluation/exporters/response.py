"""A study's raw answers as a streamed download, shared by the API and the dashboard."""

from __future__ import annotations

from django.http import StreamingHttpResponse

from annotation.models import Study
from evaluation.exporters import FORMATS
from evaluation.exporters.rows import answer_columns, answer_rows


def export_response(*, study: Study, file_format: str, include_external_ids: bool) -> StreamingHttpResponse:
    exporter = FORMATS[file_format]
    rows = answer_rows(study=study, include_external_ids=include_external_ids)
    response = StreamingHttpResponse(
        exporter.stream(rows, answer_columns(include_external_ids=include_external_ids)),
        content_type=exporter.CONTENT_TYPE,
    )
    suffix = "-with-external-ids" if include_external_ids else ""
    response["Content-Disposition"] = (
        f'attachment; filename="{study.slug}-answers{suffix}.{exporter.EXTENSION}"'
    )
    return response
