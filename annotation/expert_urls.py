"""URL patterns of the expert survey flow (included by annotation/urls.py, namespace "annotation")."""
urlpatterns: list = []
