"""Production: every secret from the environment, no defaults that are unsafe."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F401,F403
from .base import (
    RADLAY_BROWSABLE_API,
    RADLAY_PUBLIC_API_SCHEMA,
    REDIS_URL,
    REST_FRAMEWORK,
    SPECTACULAR_SETTINGS,
    api_renderers,
    csp_policy,
    env,
)

RADLAY_PRODUCTION = True  # `manage.py demo` refuses to run with these settings
SECRET_KEY = env.str("DJANGO_SECRET_KEY")  # no default: refuses to start without one
if env.bool("DJANGO_DEBUG", default=False):
    raise ImproperlyConfigured("DJANGO_DEBUG must not be set in production.")
DEBUG = False
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Cookies only over HTTPS; DJANGO_SECURE_COOKIES=false only for a deployment reached over plain
# HTTP on a trusted network (then also DJANGO_SSL_REDIRECT=false and DJANGO_HSTS_SECONDS=0).
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_HSTS_PRELOAD", default=True)
SECURE_CONTENT_TYPE_NOSNIFF = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # WhiteNoise's compressed manifest storage, each file's URL worked out once per process.
    "staticfiles": {"BACKEND": "config.static_storage.KeptURLsStaticFilesStorage"},
}
# Rate-limit counters and login throttles must be shared by every gunicorn worker.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
# The OpenAPI schema and its browsable docs list every endpoint and field: researchers only,
# unless RADLAY_PUBLIC_API_SCHEMA=true.
if not RADLAY_PUBLIC_API_SCHEMA:
    SPECTACULAR_SETTINGS = {
        **SPECTACULAR_SETTINGS,
        "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    }
# Content-Security-Policy: enforced unless DJANGO_CSP says otherwise (see base.py).
CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY = csp_policy(
    env.str("DJANGO_CSP", default="enforce")
)
# The browsable HTML API breaks the CSP (inline styles): JSON only unless asked for.
REST_FRAMEWORK = {
    **REST_FRAMEWORK,
    "DEFAULT_RENDERER_CLASSES": api_renderers(RADLAY_BROWSABLE_API is True),
}
