"""A study's raw answers as a streamed download, shared by the API and the dashboard."""

from __future__ import annotations

from django.http import StreamingHttpResponse

from annotation.access import may_see_identifying
from annotation.activity_services import activity_record
from annotation.models import Study
from evaluation.exports.answers import AnswerExport
from evaluation.exports.items import ItemAnswerExport
from evaluation.exports.wide import ProtocolWideExport


def export_response(
    *, study: Study, file_format: str, include_external_ids: bool, user, layout: str = "long"
) -> StreamingHttpResponse:
    """`study` as `access_study` admitted `user` to it. Recruiters' ids are added when asked for
    and the user's role allows identifying fields (a viewer's request gets the pseudonymous file).
    `layout`: long (every answer of every flow, one row each) or wide (the protocol's answers, one
    row per stored answer and a column per question: evaluation/exports/wide.py)."""
    include_external_ids = include_external_ids and may_see_identifying(study=study)
    name = "answers" if layout == "long" else "answers-protocol-wide"
    details = {"file": f"{name}.{file_format}", "external_ids": include_external_ids}
    activity_record(study=study, actor=user, verb="export.downloaded", details=details)
    export: AnswerExport | ProtocolWideExport
    if layout == "wide":
        export = ProtocolWideExport(
            study=study, file_format=file_format, include_external_ids=include_external_ids
        )
    else:
        export = AnswerExport(study=study, file_format=file_format, include_external_ids=include_external_ids)
    response = StreamingHttpResponse(iter(export), content_type=export.exporter.CONTENT_TYPE)
    suffix = "-with-external-ids" if include_external_ids else ""
    response["Content-Disposition"] = (
        f'attachment; filename="{study.slug}-{name}{suffix}.{export.exporter.EXTENSION}"'
    )
    return response


def item_export_response(
    *, study: Study, file_format: str, layout: str, include_external_ids: bool, user
) -> StreamingHttpResponse:
    """The study's instrument-item answers (evaluation/exports/items.py) in `layout` (long or
    wide), under the same rule for identifying fields as the raw answers. LayoutError (a
    ValueError naming the parameter) for an unknown layout, before anything is recorded."""
    include_external_ids = include_external_ids and may_see_identifying(study=study)
    export = ItemAnswerExport(
        study=study, file_format=file_format, layout=layout, include_external_ids=include_external_ids
    )
    details = {"file": f"items-{layout}.{file_format}", "external_ids": include_external_ids}
    activity_record(study=study, actor=user, verb="export.downloaded", details=details)
    response = StreamingHttpResponse(iter(export), content_type=export.exporter.CONTENT_TYPE)
    suffix = "-with-external-ids" if include_external_ids else ""
    response["Content-Disposition"] = (
        f'attachment; filename="{study.slug}-items-{layout}{suffix}.{export.exporter.EXTENSION}"'
    )
    return response
