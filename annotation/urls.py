from django.urls import path, re_path

from annotation import expert_urls, lay_urls, pairs_urls
from annotation.pairwise import urls as pairwise_urls
from annotation.views import entry
from annotation.views.errors import survey_link_invalid

app_name = "annotation"
urlpatterns = [
    path("s/<str:token>/", entry.participant_entry, name="entry"),
    *expert_urls.urlpatterns,
    *lay_urls.urlpatterns,
    *pairs_urls.urlpatterns,
    *pairwise_urls.urlpatterns,
    # A cut or mistyped survey link gets the survey's own "link not valid" page, in the demo too
    # (DEBUG shows Django's URL list for an unmatched address otherwise). Last: only what no
    # survey URL above answers.
    re_path(r"^(?:s|l|r|p|c)/", survey_link_invalid),
]
