"""The client address every limit is keyed on, and the rule that a limit never takes the site down.

One rule for the address, used by the join/consent rate limits (django-ratelimit's
RATELIMIT_IP_META_KEY), the API's throttles (DRF) and the login lockout (django-axes'
AXES_CLIENT_IP_CALLABLE): a header any client can write (X-Forwarded-For) must never decide it,
or rotating the header escapes every limit.

- RADLAY_CLIENT_IP.header empty: REMOTE_ADDR, the peer of the connection.
- Set (a request.META key, e.g. HTTP_X_FORWARDED_FOR or HTTP_X_REAL_IP): the comma-separated
  addresses in it, of which the RADLAY_CLIENT_IP.proxies-th from the right, the one the outermost
  trusted proxy saw. Each proxy appends the address it received the request from, so everything
  left of that entry was written by the client and is ignored. A value that is not an IP address
  falls back to REMOTE_ADDR.

The counters live in the cache (Redis in production). A cache outage must not turn every survey
request into a 500: the limits fail open, with a warning in the log, until the cache is back."""

from __future__ import annotations

import ipaddress
import logging

from django.conf import settings
from django.http import HttpRequest
from redis.exceptions import RedisError
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

logger = logging.getLogger("radlay.limits")

# What a cache backend raises when its server is unreachable: redis-py's errors, and the socket
# errors of the other backends.
CACHE_ERRORS = (RedisError, OSError)


def client_ip(request: HttpRequest) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    header = settings.RADLAY_CLIENT_IP.header
    if not header:
        return remote
    addresses = [part.strip() for part in request.META.get(header, "").split(",") if part.strip()]
    if not addresses:
        return remote
    candidate = addresses[-min(max(settings.RADLAY_CLIENT_IP.proxies, 1), len(addresses))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def limit_unavailable(what: str, error: Exception) -> None:
    """Log that a limit could not be counted and is let through (fail open)."""
    logger.warning("Rate limit %s not applied, the cache is unreachable: %s", what, error)


class _ClientAddressThrottle(SimpleRateThrottle):
    """DRF's throttles keyed on `client_ip` (DRF's own reads X-Forwarded-For with no proxy count),
    and let through when the cache is down."""

    def get_ident(self, request) -> str:
        return client_ip(request)

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except CACHE_ERRORS as error:
            limit_unavailable(f"API {self.scope}", error)
            return True


class AnonThrottle(_ClientAddressThrottle, AnonRateThrottle):
    pass


class UserThrottle(_ClientAddressThrottle, UserRateThrottle):
    pass
