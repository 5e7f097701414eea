from django.urls import path

from annotation import expert_urls, lay_urls
from annotation.pairwise import urls as pairwise_urls
from annotation.views import entry

app_name = "annotation"
urlpatterns = [
    path("s/<str:token>/", entry.participant_entry, name="entry"),
    *expert_urls.urlpatterns,
    *lay_urls.urlpatterns,
    *pairwise_urls.urlpatterns,
]
