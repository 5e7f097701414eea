"""A study's raw answers as a streamed download, shared by the API and the dashboard."""

from __future__ import annotations

from django.http import StreamingHttpResponse

from annotation.access import may_see_identifying
from annotation.activity_services import activity_record
from annotation.models import Study
from evaluation.exporters.answers import AnswerExport


def export_response(
    *, study: Study, file_format: str, include_external_ids: bool, user
) -> StreamingHttpResponse:
    """`study` as `access_study` admitted `user` to it. Recruiters' ids are added when asked for
    and the user's role allows identifying fields (a viewer's request gets the pseudonymous file)."""
    include_external_ids = include_external_ids and may_see_identifying(study=study)
    details = {"file": f"answers.{file_format}", "external_ids": include_external_ids}
    activity_record(study=study, actor=user, verb="export.downloaded", details=details)
    export = AnswerExport(study=study, file_format=file_format, include_external_ids=include_external_ids)
    response = StreamingHttpResponse(iter(export), content_type=export.exporter.CONTENT_TYPE)
    suffix = "-with-external-ids" if include_external_ids else ""
    response["Content-Disposition"] = (
        f'attachment; filename="{study.slug}-answers{suffix}.{export.exporter.EXTENSION}"'
    )
    return response
