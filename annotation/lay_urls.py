"""URL patterns of the lay survey flow (included by annotation/urls.py, namespace "annotation")."""
urlpatterns: list = []
