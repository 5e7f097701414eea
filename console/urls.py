"""The study console's pages, under /console/ (reached from the dashboard's study list)."""

from django.urls import path

from console import (
    flow_views,
    instrument_views,
    launch_views,
    participant_views,
    qualification_views,
    study_views,
    upload_views,
)
from console.adaptive_views import adaptive_allocation
from console.adjudication_views import adjudication_queue_page, adjudication_unit_page
from console.archive_views import study_import, study_import_confirm
from privacy import views as privacy_views

app_name = "console"
urlpatterns: list = [
    path("new/", study_views.study_new, name="study-new"),
    path("import/", study_import, name="study-import"),
    path("import/confirm/", study_import_confirm, name="study-import-confirm"),
    path("<slug:slug>/", study_views.study_setup, name="study-setup"),
    path("<slug:slug>/status/", study_views.study_status, name="study-status"),
    path("<slug:slug>/preview/<str:role>/", study_views.study_preview, name="study-preview"),
    path("<slug:slug>/pilot/", study_views.study_pilot, name="study-pilot"),
    path("<slug:slug>/duplicate/", study_views.study_copy, name="study-duplicate"),
    path("<slug:slug>/flows/", flow_views.flows, name="flows"),
    path("<slug:slug>/adaptive/", adaptive_allocation, name="adaptive"),
    path("<slug:slug>/flows/add/", flow_views.flow_add, name="flow-add"),
    path("<slug:slug>/flows/reference/", flow_views.reference_set, name="flow-reference"),
    path("<slug:slug>/flows/launch/", flow_views.flows_launch, name="flows-launch"),
    path("<slug:slug>/flows/controls/", flow_views.controls, name="flow-controls"),
    path("<slug:slug>/flows/span-assistance/", flow_views.span_assistance, name="flow-span-assistance"),
    path("<slug:slug>/instruments/", instrument_views.instrument_list, name="instruments"),
    path("<slug:slug>/qualification/", qualification_views.qualification, name="qualification"),
    path(
        "<slug:slug>/instruments/error-spans/",
        instrument_views.instrument_error_spans_add,
        name="instrument-error-spans",
    ),
    path("<slug:slug>/instruments/<slug:key>/", instrument_views.instrument_edit, name="instrument-edit"),
    path(
        "<slug:slug>/instruments/<slug:key>/preview/",
        instrument_views.instrument_preview,
        name="instrument-preview",
    ),
    path(
        "<slug:slug>/instruments/<slug:key>/items/<slug:item_key>/",
        instrument_views.instrument_item,
        name="instrument-item",
    ),
    path(
        "<slug:slug>/instruments/<slug:key>.<str:file_format>",
        instrument_views.instrument_download,
        name="instrument-download",
    ),
    path("<slug:slug>/privacy/", privacy_views.review, name="privacy"),
    path("<slug:slug>/privacy/policy/", privacy_views.policy_change, name="privacy-policy"),
    path(
        "<slug:slug>/privacy/originals/", privacy_views.originals_for_radiologists, name="privacy-originals"
    ),
    path("<slug:slug>/privacy/detect/", privacy_views.detect_again, name="privacy-detect"),
    path("<slug:slug>/privacy/approve/", privacy_views.approve, name="privacy-approve"),
    path(
        "<slug:slug>/privacy/finding/<int:finding_id>/", privacy_views.finding_review, name="privacy-finding"
    ),
    path("<slug:slug>/privacy/source/<int:source_id>/mark/", privacy_views.finding_add, name="privacy-mark"),
    path("<slug:slug>/adjudication/", adjudication_queue_page, name="adjudication"),
    path("<slug:slug>/adjudication/<str:unit>/", adjudication_unit_page, name="adjudication-unit"),
    path("<slug:slug>/upload/", upload_views.upload, name="upload"),
    path("<slug:slug>/upload/<int:upload_id>/", upload_views.upload_detail, name="upload-detail"),
    path("<slug:slug>/generate/", launch_views.launch_generation, name="launch-generation"),
    path("<slug:slug>/judges/", launch_views.launch_judges, name="launch-judges"),
    path("<slug:slug>/participants/", participant_views.participants, name="participants"),
    path(
        "<slug:slug>/participants/invite/", participant_views.participants_invite, name="participants-invite"
    ),
    path(
        "<slug:slug>/participants/links.csv",
        participant_views.participants_links_csv,
        name="participants-links",
    ),
    path(
        "<slug:slug>/participants/<int:participant_id>/link/",
        participant_views.participant_link,
        name="participant-link",
    ),
    path(
        "<slug:slug>/participants/<int:participant_id>/withdraw/",
        participant_views.participant_withdrawal,
        name="participant-withdraw",
    ),
]
