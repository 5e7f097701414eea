"""Settings shared by every environment. Everything configurable comes from the environment
(django-environ); see README "Configuration" for the variables."""

from pathlib import Path

import environ

from config.settings import specs
from config.settings.renamed import env_renamed, env_spec

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    # Swagger UI's files served by the app: hospital networks often block public CDNs.
    "drf_spectacular_sidecar",
    "django_htmx",
    # Named partials ("page.html#part") so an htmx request gets part of the page it polls
    # (Django 6.0 has them built in; this app wraps the template loaders on 5.2).
    "template_partials",
    "axes",
    "annotation",
    "studies",
    "surveys",
    "work",
    "evaluation",
    "generation",
    "ml",
    "judging",
    "console",
    # Hospital sign-in (OpenID Connect) and a second factor (TOTP): signin/.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "signin",
    "privacy",
    "qualification",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # No page with study data or answers is kept by browsers or proxies (config/no_store.py).
    "config.no_store.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Every request starts in English; a survey view switches to its study's language.
    "surveys.survey_language.SurveyLanguageMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # RADLAY_MFA_REQUIRED: a researcher gives a TOTP code before any other page.
    "signin.second_factor.SecondFactorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # django-csp's, with the settings' policy built once per process (config/csp_header.py).
    "config.csp_header.KeptPolicyCSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes requires: answers a locked-out login with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.context_processors.protocol_credit",
            ],
            # {% partialdef %} and {% partial %} in every template without a {% load %}, as in Django 6.0.
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

# The embedded default is a SQLite file under var/; production and CI set DATABASE_URL.
(BASE_DIR / "var").mkdir(exist_ok=True)
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'radlay.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Keep connections between requests (a new PostgreSQL connection per request costs more than the
# request's own queries); checked before reuse so a database restart costs one failed request less.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DJANGO_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default must never lose an answer to "database is locked": WAL lets readers run
    # beside the one writer, IMMEDIATE transactions take the write lock at BEGIN (so a transaction
    # never fails half-way on an upgrade from read to write), and writers wait up to 30 s in turn.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
        **DATABASES["default"].get("OPTIONS", {}),
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool(
    "DJANGO_DB_PREPARED_STATEMENTS", default=True
):
    # Server-side parameters and prepared statements: PostgreSQL plans a statement once per
    # connection instead of on every execution. Planning was most of the database's CPU time on
    # the survey's small queries (README, Benchmarks). A pooler in transaction mode (PgBouncer's
    # default) cannot keep prepared statements: set DJANGO_DB_PREPARED_STATEMENTS=0 behind one.
    # The backend binds a statement with more parameters than PostgreSQL takes on the client.
    DATABASES["default"]["ENGINE"] = "config.postgresql"
    DATABASES["default"]["OPTIONS"] = {
        "server_side_binding": True,
        "prepare_threshold": 5,  # psycopg prepares a statement at its 5th execution on a connection
        **DATABASES["default"].get("OPTIONS", {}),
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

AUTHENTICATION_BACKENDS = [
    # Refuses a login while its username + IP is locked out (before the password is checked).
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # The hospital's OpenID Connect provider; inert while RADLAY_OIDC_ISSUER is empty.
    "signin.oidc.HospitalOIDCBackend",
]

# --- Hospital sign-in and second factor (docs/deployment/hospital-sign-in.md) ----------------
# RADLAY_OIDC_ISSUER: the provider's issuer URL (its /.well-known/openid-configuration names the
# endpoints); empty: local accounts only. The client radlay is registered as, with redirect URI
# https://<host>/signin/oidc/callback/.
RADLAY_OIDC_ISSUER = env.str("RADLAY_OIDC_ISSUER", default="")
RADLAY_OIDC_CLIENT_ID = env.str("RADLAY_OIDC_CLIENT_ID", default="")
RADLAY_OIDC_CLIENT_SECRET = env.str("RADLAY_OIDC_CLIENT_SECRET", default="")
# group=role,...: the claim's groups as radlay roles (researcher, admin, <study slug>:<owner|
# editor|viewer>); when set, someone in none of these groups is refused.
RADLAY_OIDC_GROUPS_CLAIM = env.str("RADLAY_OIDC_GROUPS_CLAIM", default="groups")
RADLAY_OIDC_GROUP_ROLES = env.dict("RADLAY_OIDC_GROUP_ROLES", default={})
# Every researcher account (staff, superusers, study team members) gives a TOTP code after
# signing in, however it signed in.
RADLAY_MFA_REQUIRED = env.bool("RADLAY_MFA_REQUIRED", default=False)
OTP_TOTP_ISSUER = "radlay"

# --- Abuse limits (docs/configuration.md) ------------------------------------------------------
# The structured settings (RADLAY_LOGIN_LOCKOUT, RADLAY_RATE_LIMITS, ...) have their keys and their
# defaults in config/settings/specs.py; the old variables they fold are read by renamed.py.
# Logins (/dashboard/login/, /radiologist/login/, /admin/login/, /api/token/): after `failures`
# wrong passwords for one username from one IP, that pair is locked for `hours`, right password or not.
RADLAY_LOGIN_LOCKOUT = env_spec(specs.LoginLockout, "RADLAY_LOGIN_LOCKOUT")
AXES_ENABLED = RADLAY_LOGIN_LOCKOUT.enabled
AXES_FAILURE_LIMIT = RADLAY_LOGIN_LOCKOUT.failures
AXES_COOLOFF_TIME = RADLAY_LOGIN_LOCKOUT.hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# The client address every limit (login lockout, join/consent rates, API throttles) is keyed on,
# one rule in config.request_limits.client_ip: REMOTE_ADDR, or behind reverse proxies the request
# header that holds it (a request.META key, e.g. HTTP_X_FORWARDED_FOR or HTTP_X_REAL_IP), read
# `proxies` entries from the right so that what a client writes into it is ignored.
RADLAY_CLIENT_IP = env_spec(specs.ClientIp, "RADLAY_CLIENT_IP")
RATELIMIT_IP_META_KEY = "config.request_limits.client_ip"
AXES_CLIENT_IP_CALLABLE = "config.request_limits.client_ip"
# POSTs to the open recruitment link /join/<study>/ (agree or decline), per client IP and per study,
# to a participant's consent page per IP, and refused attempts to resume a participant from the
# recruitment link (a known PROLIFIC_PID from a browser that did not start it, without the
# SESSION_ID it started with) per client address; the API's throttles.
RADLAY_RATE_LIMITS = env_spec(specs.RateLimits, "RADLAY_RATE_LIMITS")
RATELIMIT_ENABLE = RADLAY_RATE_LIMITS.enabled
# A limit whose counter cannot be read (the cache is down) lets the request through.
RATELIMIT_FAIL_OPEN = True
# Laypeople of one study enrolled and still working; newcomers wait while it is reached (0 = no cap).
RADLAY_MAX_OPEN_ENROLMENTS = env.int("RADLAY_MAX_OPEN_ENROLMENTS", default=500)

# Researchers' pages are in English; a study's participants see the study's language
# (Study.language, one of LANGUAGES), activated by the survey views (surveys/survey_language.py).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("es", "Spanish")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request without it
MEDIA_ROOT = Path(env.str("DJANGO_MEDIA_ROOT", default=str(BASE_DIR / "var" / "media")))
# What a file a researcher gives radlay may ask of the server: the upload page's largest file
# (streamed to MEDIA_ROOT, then imported), a study archive's members and rows
# (evaluation/exports/study_archive_reader.py), a sources file's columns and systems
# (studies/importers/import_limits.py), an instrument document's size before it is parsed.
RADLAY_FILE_LIMITS = env_spec(specs.FileLimits, "RADLAY_FILE_LIMITS")
LOGIN_URL = "admin:login"
# A failed CSRF check gets the branded page that says what to do next (config/errors.py).
CSRF_FAILURE_VIEW = "surveys.errors.csrf_failure"
LOGIN_REDIRECT_URL = "/dashboard/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "evaluation.api_pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_THROTTLE_CLASSES": [
        "config.request_limits.AnonThrottle",
        "config.request_limits.UserThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": RADLAY_RATE_LIMITS.api_anon,
        "user": RADLAY_RATE_LIMITS.api_user,
    },
}


def api_renderers(browsable: bool) -> list[str]:
    """DRF's renderers: JSON, and the browsable HTML API when `browsable`. DRF's HTML templates
    use inline styles, which the Content-Security-Policy refuses, so production serves JSON only
    unless RADLAY_BROWSABLE_API=true (then run the CSP as report-only); /api/docs/ is CSP-clean."""
    return ["rest_framework.renderers.JSONRenderer"] + (
        ["rest_framework.renderers.BrowsableAPIRenderer"] if browsable else []
    )


# DRF's browsable HTML API: unset, on here and off in production (config/settings/production.py).
RADLAY_BROWSABLE_API = env.bool("RADLAY_BROWSABLE_API", default=None)
REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"] = api_renderers(RADLAY_BROWSABLE_API is not False)
# The OpenAPI schema and its docs page without a login (production asks for one unless this is on).
RADLAY_PUBLIC_API_SCHEMA = env.bool("RADLAY_PUBLIC_API_SCHEMA", default=False)
SPECTACULAR_SETTINGS = {
    "TITLE": "radlay API",
    "DESCRIPTION": "Two-pronged human evaluation of radiology report simplification.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "evaluation.api_schema.add_error_responses",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -------------------------------------------------------------------------------
# With no REDIS_URL the embedded mode runs tasks in-process (task_always_eager). This is a
# configuration choice made here, never a fallback when a configured broker is unreachable.
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
# In the embedded mode, launched work (generation, judges) runs in a background thread of the web
# process, so the launch returns at once to the batch's progress page; False runs it inside the
# launching request (the test settings: a test reads the finished batch right after launching).
RADLAY_EMBEDDED_TASKS_IN_BACKGROUND = env.bool("RADLAY_EMBEDDED_TASKS_IN_BACKGROUND", default=True)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=60 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=55 * 60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A launch whose broker is down says so within seconds instead of hanging.
CELERY_BROKER_CONNECTION_TIMEOUT = env.float("CELERY_BROKER_CONNECTION_TIMEOUT", default=3.0)
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 1,
}
# Redis hands an unacknowledged (acks_late) message to another worker after this long: it must
# outlast the longest task, or a live job would be delivered twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}
# One cache for every process (the analysis freshness checks, anything else cached): Redis where
# it is configured, else the embedded mode's single process keeps it in memory.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
# Fine-tuning runs for hours; it checkpoints, so a run cut by the limit resumes on retry.
RADLAY_TRAINING = env_spec(specs.Training, "RADLAY_TRAINING")
CELERY_TASK_ANNOTATIONS = {
    "ml.tasks.training_job_run_task": {
        "time_limit": RADLAY_TRAINING.time_limit,
        "soft_time_limit": max(60, RADLAY_TRAINING.time_limit - 300),
    }
}

# --- radlay ---------------------------------------------------------------------------------
# The production settings module sets it: `manage.py demo` refuses to run there.
RADLAY_PRODUCTION = False
# Where the authors' 2024 release lives (read at test/import time, never copied into the repo).
RADLAY_RELEASE_DIR = Path(
    env.str(
        "RADLAY_RELEASE_DIR", default=str(BASE_DIR.parent / "shared" / "data" / "human_evaluation_release")
    )
)
# Local model directories (no model hub is reachable from radlay's machines).
RADLAY_EMBEDDING_MODEL = env.str("RADLAY_EMBEDDING_MODEL", default="")
RADLAY_MODEL_DIR = Path(env.str("RADLAY_MODEL_DIR", default=str(BASE_DIR / "var" / "models")))
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
# Calls to the OpenAI-compatible backend: timeout, retries and the first retry's delay.
RADLAY_LLM_CALLS = env_spec(specs.LlmCalls, "RADLAY_LLM_CALLS")
# Local models: the device, the jobs of a local-model (gpu queue) batch one task runs at once, the
# share of the GPU's memory vllm's engine may take (weights + KV cache).
RADLAY_LOCAL_MODELS = env_spec(specs.LocalModels, "RADLAY_LOCAL_MODELS")
# De-identify sources as they are imported (privacy/): findings for the review page, and the
# de-identified text external backends and laypeople receive.
RADLAY_DEIDENTIFY_ON_IMPORT = env.bool("RADLAY_DEIDENTIFY_ON_IMPORT", default=True)
# LLM judges (judging/): model calls per sample before a malformed answer fails the item, and
# bootstrap resamples of the agreement intervals.
RADLAY_JUDGING = env_spec(specs.Judging, "RADLAY_JUDGING")
# --- The job layer (work/): every kind of background work (generation batches, judge runs, analysis
# snapshots, power plans, training jobs, source uploads) runs under these. The names they had before
# (generation's, the analysis's, the plans' own) are read for one more release: config/settings/renamed.py.
# Attempts of a job on transient errors (a lost worker counts as one).
RADLAY_JOB_ATTEMPTS = env_renamed(env, "int", "RADLAY_JOB_ATTEMPTS", 3)
# The job layer's clock (heartbeat, staleness, re-send deadline, healing interval, retry back-off,
# stall and worker-silence thresholds) and its launch limits: keys and defaults in specs.py.
RADLAY_JOB_TIMING = env_spec(specs.JobTiming, "RADLAY_JOB_TIMING")
RADLAY_JOB_LIMITS = env_spec(specs.JobLimits, "RADLAY_JOB_LIMITS")
# Tasks of one batch (generation, judge run) queued or running at once unless its launch says.
RADLAY_JOB_CONCURRENCY = env_renamed(env, "int", "RADLAY_JOB_CONCURRENCY", 8)
# Readers of the analysis, and the beat that refreshes open studies' snapshots (specs.Analysis).
RADLAY_ANALYSIS = env_spec(specs.Analysis, "RADLAY_ANALYSIS")
_HEAL = {
    "schedule": RADLAY_JOB_TIMING.heal_interval,
    "options": {"expires": RADLAY_JOB_TIMING.heal_interval},
}
CELERY_BEAT_SCHEDULE = {
    "generation-batches-heal": {"task": "generation.tasks.generation_batches_heal", **_HEAL},
    "judge-runs-heal": {"task": "judging.tasks.judge_runs_heal", **_HEAL},
    "source-uploads-heal": {"task": "console.tasks.source_uploads_heal", **_HEAL},
    "analysis-snapshots-heal": {"task": "evaluation.tasks.analysis_snapshots_heal", **_HEAL},
    "power-plans-heal": {"task": "evaluation.tasks.power_plans_heal", **_HEAL},
    "training-jobs-heal": {"task": "ml.tasks.training_jobs_heal", **_HEAL},
    # Analysis snapshots of open studies whose answers changed are recomputed before anyone opens
    # the dashboard (evaluation.services.analysis_snapshots_refresh).
    "analysis-snapshots-refresh": {
        "task": "evaluation.tasks.analysis_snapshots_refresh",
        "schedule": RADLAY_ANALYSIS.refresh_seconds,
    },
}

# Further AnalysisOptions fields for the dashboard, API, report and `analyze`
# (evaluation.analysis.study_frames.analysis_options_from_settings): not from the environment; the
# test settings and the benchmarks set it to make analyses quick.
RADLAY_ANALYSIS_OPTIONS: dict = {}

# --- Content-Security-Policy (django-csp) ---------------------------------------------------------
# Pages load scripts, styles, fonts and images from this server only, with no inline scripts, inline
# event handlers or inline styles (tests/test_templates_csp.py keeps the templates that way).
# DJANGO_CSP: "enforce", "report-only" (the browser reports violations but blocks nothing) or "off";
# production enforces by default. DJANGO_CSP_REPORT_URI: where browsers send violation reports.
CSP_DIRECTIVES = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    # Swagger UI's stylesheet draws its icons as data: images.
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
if env.str("DJANGO_CSP_REPORT_URI", default=""):
    CSP_DIRECTIVES["report-uri"] = [env.str("DJANGO_CSP_REPORT_URI")]


def csp_policy(mode: str) -> tuple[dict | None, dict | None]:
    """(CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY) for a DJANGO_CSP mode."""
    if mode not in {"enforce", "report-only", "off"}:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"DJANGO_CSP must be enforce, report-only or off, not {mode!r}.")
    policy = {"DIRECTIVES": CSP_DIRECTIVES}
    return (policy if mode == "enforce" else None, policy if mode == "report-only" else None)


CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY = csp_policy(
    env.str("DJANGO_CSP", default="off")
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"redact_tokens": {"()": "config.log_filters.RedactSurveyTokens"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact_tokens"]}
    },
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
}
