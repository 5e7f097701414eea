"""Test settings: the test command points DATABASE_URL/REDIS_URL at the throwaway PostgreSQL and
Redis it starts; tasks run eagerly unless a test starts a real worker."""
from .base import *  # noqa: F401,F403
from .base import env

DEBUG = False
SECRET_KEY = "radlay-test-key"
ALLOWED_HOSTS = ["*"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
