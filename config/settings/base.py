"""Settings shared by every environment. Everything configurable comes from the environment
(django-environ); see README "Configuration" for the variables."""

from pathlib import Path

import environ

from config.settings.renamed import env_renamed

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
    "annotation.survey_language.SurveyLanguageMiddleware",
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

# --- Hospital sign-in and second factor (docs/deployment.md "Hospital sign-in") ----------------
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

# --- Abuse limits (README "Configuration") ----------------------------------------------------
# Logins (/dashboard/login/, /radiologist/login/, /admin/login/, /api/token/): after
# RADLAY_LOGIN_FAILURE_LIMIT wrong passwords for one username from one IP, that pair is locked for
# RADLAY_LOGIN_LOCKOUT_HOURS, right password or not.
AXES_ENABLED = env.bool("RADLAY_LOGIN_LOCKOUT", default=True)
AXES_FAILURE_LIMIT = env.int("RADLAY_LOGIN_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = env.float("RADLAY_LOGIN_LOCKOUT_HOURS", default=1.0)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# The client address every limit (login lockout, join/consent rates, API throttles) is keyed on,
# one rule in config.request_limits.client_ip: REMOTE_ADDR, or behind reverse proxies the request
# header that holds it (a request.META key, e.g. HTTP_X_FORWARDED_FOR or HTTP_X_REAL_IP), read
# RADLAY_NUM_PROXIES entries from the right so that what a client writes into it is ignored.
RADLAY_CLIENT_IP_HEADER = env.str("RADLAY_CLIENT_IP_HEADER", default="")
RADLAY_NUM_PROXIES = env.int("RADLAY_NUM_PROXIES", default=1)
RATELIMIT_IP_META_KEY = "config.request_limits.client_ip"
AXES_CLIENT_IP_CALLABLE = "config.request_limits.client_ip"
RATELIMIT_ENABLE = env.bool("RADLAY_RATE_LIMITS", default=True)
# A limit whose counter cannot be read (the cache is down) lets the request through.
RATELIMIT_FAIL_OPEN = True
# POSTs to the open recruitment link /join/<study>/ (agree or decline), per client IP and per study,
# and to a participant's consent page per IP ("" = no limit); django-ratelimit's "N/s|m|h|d".
RADLAY_JOIN_RATE_PER_IP = env.str("RADLAY_JOIN_RATE_PER_IP", default="20/h")
RADLAY_JOIN_RATE_PER_STUDY = env.str("RADLAY_JOIN_RATE_PER_STUDY", default="600/h")
RADLAY_CONSENT_RATE_PER_IP = env.str("RADLAY_CONSENT_RATE_PER_IP", default="60/h")
# Refused attempts to resume a participant from the recruitment link (a known PROLIFIC_PID from a
# browser that did not start it, without the SESSION_ID it started with) per client address; over
# it every resumption from that address is answered 429 for the rest of the window.
RADLAY_RESUME_REFUSALS_PER_IP = env.str("RADLAY_RESUME_REFUSALS_PER_IP", default="10/h")
# Laypeople of one study enrolled and still working; newcomers wait while it is reached (0 = no cap).
RADLAY_MAX_OPEN_ENROLMENTS = env.int("RADLAY_MAX_OPEN_ENROLMENTS", default=500)

# Researchers' pages are in English; a study's participants see the study's language
# (Study.language, one of LANGUAGES), activated by the survey views (annotation/survey_language.py).
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
# The largest sources file the console's upload page takes (streamed to MEDIA_ROOT, then imported).
RADLAY_UPLOAD_MAX_MB = env.int("RADLAY_UPLOAD_MAX_MB", default=512)
# A study archive's bounds (evaluation/exports/study_archive_reader.py): one member and all members
# inflated, one row of a table; checked on the sizes the zip declares and on the bytes inflated.
RADLAY_ARCHIVE_MAX_MEMBER_MB = env.int("RADLAY_ARCHIVE_MAX_MEMBER_MB", default=1024)
RADLAY_ARCHIVE_MAX_TOTAL_MB = env.int("RADLAY_ARCHIVE_MAX_TOTAL_MB", default=4096)
RADLAY_ARCHIVE_MAX_ROW_MB = env.int("RADLAY_ARCHIVE_MAX_ROW_MB", default=16)
# A sources file (upload or `manage.py import_study`) is refused past these (annotation/importers/
# import_limits.py): columns of its header, and systems of the file or of the study after it.
RADLAY_IMPORT_MAX_COLUMNS = env.int("RADLAY_IMPORT_MAX_COLUMNS", default=256)
RADLAY_IMPORT_MAX_SYSTEMS = env.int("RADLAY_IMPORT_MAX_SYSTEMS", default=200)
# An instrument document (the console's editor, `manage.py instrument`) is refused past this size,
# before it is parsed (instruments/document_limits.py; its nesting is bounded by the schema).
RADLAY_INSTRUMENT_MAX_BYTES = env.int("RADLAY_INSTRUMENT_MAX_BYTES", default=1_000_000)
LOGIN_URL = "admin:login"
# A failed CSRF check gets the branded page that says what to do next (config/errors.py).
CSRF_FAILURE_VIEW = "annotation.views.errors.csrf_failure"
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
        "anon": env.str("RADLAY_API_RATE_ANON", default="30/min"),
        "user": env.str("RADLAY_API_RATE_USER", default="600/min"),
    },
}


def api_renderers(browsable: bool) -> list[str]:
    """DRF's renderers: JSON, and the browsable HTML API when `browsable`. DRF's HTML templates
    use inline styles, which the Content-Security-Policy refuses, so production serves JSON only
    unless RADLAY_BROWSABLE_API=true (then run the CSP as report-only); /api/docs/ is CSP-clean."""
    return ["rest_framework.renderers.JSONRenderer"] + (
        ["rest_framework.renderers.BrowsableAPIRenderer"] if browsable else []
    )


REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"] = api_renderers(env.bool("RADLAY_BROWSABLE_API", default=True))
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
RADLAY_TRAINING_TIME_LIMIT = env.int("RADLAY_TRAINING_TIME_LIMIT", default=24 * 60 * 60)
CELERY_TASK_ANNOTATIONS = {
    "ml.tasks.training_job_run_task": {
        "time_limit": RADLAY_TRAINING_TIME_LIMIT,
        "soft_time_limit": max(60, RADLAY_TRAINING_TIME_LIMIT - 300),
    }
}

# --- radlay ---------------------------------------------------------------------------------
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
RADLAY_LLM_TIMEOUT = env.float("RADLAY_LLM_TIMEOUT", default=60.0)
RADLAY_LLM_MAX_RETRIES = env.int("RADLAY_LLM_MAX_RETRIES", default=4)
RADLAY_GENERATION_CONCURRENCY = env.int("RADLAY_GENERATION_CONCURRENCY", default=8)
# De-identify sources as they are imported (privacy/): findings for the review page, and the
# de-identified text external backends and laypeople receive.
RADLAY_DEIDENTIFY_ON_IMPORT = env.bool("RADLAY_DEIDENTIFY_ON_IMPORT", default=True)
# Jobs of a local-model (gpu queue) batch that one task runs in lockstep, one device batch per step.
RADLAY_GPU_BATCH_SIZE = env.int("RADLAY_GPU_BATCH_SIZE", default=16)
# LLM judges (judging/): model calls per sample before a malformed answer fails the item, and
# bootstrap resamples of the agreement intervals.
RADLAY_JUDGE_PARSE_ATTEMPTS = env.int("RADLAY_JUDGE_PARSE_ATTEMPTS", default=3)
RADLAY_JUDGE_BOOTSTRAP_RESAMPLES = env.int("RADLAY_JUDGE_BOOTSTRAP_RESAMPLES", default=500)
# --- The job layer (work/): every kind of background work (generation batches, judge runs, analysis
# snapshots, power plans, training jobs, source uploads) runs under these. The names they had before
# (generation's, the analysis's, the plans' own) are read for one more release: config/settings/renamed.py.
# Attempts of a job on transient errors (a lost worker counts as one), and the first retry's backoff
# ceiling in seconds (it doubles per attempt, up to 5 minutes).
RADLAY_JOB_ATTEMPTS = env_renamed(env, "int", "RADLAY_JOB_ATTEMPTS", 3)
RADLAY_JOB_RETRY_DELAY = env_renamed(env, "float", "RADLAY_JOB_RETRY_DELAY", 10.0)
# A running job stamps a heartbeat this often (seconds); one silent for RADLAY_JOB_STALE_AFTER
# (unset or 0: four heartbeats) lost its worker and is sent again.
RADLAY_JOB_HEARTBEAT = env_renamed(env, "float", "RADLAY_JOB_HEARTBEAT", 15.0)
RADLAY_JOB_STALE_AFTER = env_renamed(env, "float", "RADLAY_JOB_STALE_AFTER", 0) or None
# A job sent this long ago (seconds) that never started lost its message and is sent again.
RADLAY_JOB_DISPATCH_DEADLINE = env_renamed(env, "float", "RADLAY_JOB_DISPATCH_DEADLINE", 600.0)
# How often Celery beat runs the self-healing check of every kind of background work (seconds); a
# launch the broker refused is sent again by the first check after this long.
RADLAY_JOB_HEAL_INTERVAL = env_renamed(env, "float", "RADLAY_JOB_HEAL_INTERVAL", 30.0)
_HEAL = {"schedule": RADLAY_JOB_HEAL_INTERVAL, "options": {"expires": RADLAY_JOB_HEAL_INTERVAL}}
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
        "schedule": env.float("RADLAY_ANALYSIS_REFRESH_SECONDS", default=60.0),
    },
}
# A batch page that shows no finished job for this long (seconds) says "no progress", drops its ETA
# and names the jobs sent this long ago that never started (with a Resume button).
RADLAY_JOB_STALL_AFTER = env_renamed(env, "float", "RADLAY_JOB_STALL_AFTER", 300.0)
# Launch limits of heavy background work, counted per kind (work.limits): queued or running at once
# per study and per user (superusers and command-line launches are exempt from the per-user one).
RADLAY_JOB_MAX_RUNNING_PER_STUDY = env_renamed(env, "int", "RADLAY_JOB_MAX_RUNNING_PER_STUDY", 3)
RADLAY_JOB_MAX_RUNNING_PER_USER = env_renamed(env, "int", "RADLAY_JOB_MAX_RUNNING_PER_USER", 5)
# Jobs (generation) or model calls (judging) per batch launch, and the largest concurrency of a batch.
RADLAY_MAX_BATCH_SIZE = env.int("RADLAY_MAX_BATCH_SIZE", default=20_000)
RADLAY_MAX_BATCH_CONCURRENCY = env.int("RADLAY_MAX_BATCH_CONCURRENCY", default=256)
RADLAY_LLM_RETRY_DELAY = env.float("RADLAY_LLM_RETRY_DELAY", default=1.0)
RADLAY_TRANSFORMERS_DEVICE = env.str("RADLAY_TRANSFORMERS_DEVICE", default="") or None
# The vllm backend (optional install): share of the GPU's memory its engine may take (weights + KV cache).
RADLAY_VLLM_GPU_MEMORY_UTILIZATION = env.float("RADLAY_VLLM_GPU_MEMORY_UTILIZATION", default=0.85)
# `train_simplifier --method dpo` refuses fewer preference pairs than this.
RADLAY_DPO_MIN_PAIRS = env.int("RADLAY_DPO_MIN_PAIRS", default=20)

# Dashboard/API/report/analyze options (evaluation.analysis.study_frames.analysis_options_from_settings). The
# semantic metrics embed texts with the local MiniLM (cached in the database by text hash).
RADLAY_ANALYSIS_OPTIONS = {"embeddings": env.bool("RADLAY_ANALYSIS_EMBEDDINGS", default=True)}
# Readers compare the study's answers with what its snapshot covers at most this often (seconds).
RADLAY_ANALYSIS_CHECK_SECONDS = env.int("RADLAY_ANALYSIS_CHECK_SECONDS", default=10)
# How long GET /api/studies/<slug>/analysis/?fresh=1 waits for the new snapshot (seconds) before
# answering 202: the wait holds a web worker, so it stays far under gunicorn's --timeout, and only
# one such request waits at a time (evaluation.services.analysis_snapshot_wait).
RADLAY_ANALYSIS_FRESH_TIMEOUT = env.float("RADLAY_ANALYSIS_FRESH_TIMEOUT", default=5.0)
if not 0 <= RADLAY_ANALYSIS_FRESH_TIMEOUT <= 10:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("RADLAY_ANALYSIS_FRESH_TIMEOUT must be between 0 and 10 seconds")
# Pages say "no worker is running" when no worker has run the healing check for this long (seconds).
RADLAY_WORKER_SILENT_AFTER = env.float("RADLAY_WORKER_SILENT_AFTER", default=180.0)
# Sample-size plans (evaluation/planning/plans.py; docs/analysis/partial-answers-and-limits.md) run on the
# `heavy` queue, never beside the snapshots; the job layer's limits count them.
# The size of one plan: simulations × points² × max_participants × max_sources (the simulated
# answers, an upper bound), and the same with mixed_simulations (mixed-model fits, far dearer per
# answer). The form's defaults are 1e9 and 2e8; its largest values were 4e12 and 4e12 (hours).
RADLAY_PLAN_MAX_WORK = env.int("RADLAY_PLAN_MAX_WORK", default=10_000_000_000)
RADLAY_PLAN_MAX_MIXED_WORK = env.int("RADLAY_PLAN_MAX_MIXED_WORK", default=2_000_000_000)

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
