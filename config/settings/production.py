"""Production: every secret from the environment, no defaults that are unsafe."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F401,F403
from .base import csp_policy, env

SECRET_KEY = env.str("DJANGO_SECRET_KEY")  # no default: refuses to start without one
if env.bool("DJANGO_DEBUG", default=False):
    raise ImproperlyConfigured("DJANGO_DEBUG must not be set in production.")
DEBUG = False
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
SECURE_CONTENT_TYPE_NOSNIFF = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# Content-Security-Policy: enforced unless DJANGO_CSP says otherwise (see base.py).
CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY = csp_policy(
    env.str("DJANGO_CSP", default="enforce")
)
