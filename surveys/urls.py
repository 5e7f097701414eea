from django.urls import path, re_path

from surveys import entry
from surveys.compare_two import urls as pairwise_urls
from surveys.errors import survey_link_invalid
from surveys.lay import urls as lay_urls
from surveys.radiologist import urls as expert_urls
from surveys.rate_each_pair import urls as pairs_urls

app_name = "surveys"
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
