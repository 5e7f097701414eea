"""A real OpenID Connect provider for the tests, on a loopback port: authlib's authorization
server (authorization code grant, PKCE, the OpenID Connect extension signing RS256 ID tokens)
behind a small WSGI app served by wsgiref in a thread. It has a login form, a discovery document,
a JWKS, a token endpoint and a userinfo endpoint, so radlay's client does every step it does
against a hospital's provider: redirect, code exchange, signature check against the published
key, nonce and PKCE, userinfo.

Users are given in `users`: {username: {"password", "sub", "email", "groups"}}."""

from __future__ import annotations

import html
import json
import os
import secrets
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from authlib.oauth2.rfc6749 import AuthorizationServer, ClientMixin, OAuth2Request
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import AuthorizationCodeMixin, UserInfo
from authlib.oidc.core.grants import OpenIDCode
from joserfc.jwk import RSAKey

KID = "radlay-test-key"


class Client(ClientMixin):
    def __init__(self, client_id: str, secret: str, redirect_uri: str):
        self.client_id, self.secret, self.redirect_uri = client_id, secret, redirect_uri

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.redirect_uri

    def get_allowed_scope(self, scope):
        return " ".join(s for s in (scope or "").split() if s in {"openid", "email", "profile"})

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri == self.redirect_uri

    def check_client_secret(self, client_secret):
        return secrets.compare_digest(client_secret, self.secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method in {"client_secret_post", "client_secret_basic"}

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type == "authorization_code"


class Code(AuthorizationCodeMixin):
    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return self.auth_time

    def get_acr(self):
        return None

    def get_amr(self):
        return ["pwd"]


class Request(OAuth2Request):
    def __init__(self, method: str, uri: str, headers: dict, query: dict, form: dict):
        super().__init__(method, uri, headers=headers)
        self._args, self._form = query, form
        self.payload = BasicOAuth2Payload({**query, **form})

    @property
    def args(self):
        return self._args

    @property
    def form(self):
        return self._form


class Provider:
    """Start with `start()`; `issuer` is its URL; `stop()` shuts it down."""

    def __init__(self, *, client_id: str, client_secret: str, redirect_uri: str, users: dict[str, dict]):
        os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")  # plain http on loopback only
        self.users = users
        self.client = Client(client_id, client_secret, redirect_uri)
        self.key = RSAKey.generate_key(2048, parameters={"kid": KID, "alg": "RS256", "use": "sig"})
        self.codes: dict[str, Code] = {}
        self.tokens: dict[str, str] = {}  # access token → username
        self.token_requests = 0
        self.server = self._authorization_server()
        self.httpd: WSGIServer | None = None

    # --- authlib's server, its grant and the OpenID Connect extension -----------------------------

    def _authorization_server(self) -> AuthorizationServer:
        server = self._server_class()()
        server.register_token_generator(
            "default", BearerTokenGenerator(lambda *a, **k: secrets.token_urlsafe(32))
        )
        server.register_grant(
            self._code_grant_class(), [CodeChallenge(required=True), self._openid_class()(require_nonce=True)]
        )
        return server

    def _server_class(self) -> type[AuthorizationServer]:
        """The server over this provider's client and tokens, answering in plain (status, body, headers)."""
        provider = self

        class Server(AuthorizationServer):
            def query_client(self, client_id):
                return provider.client if client_id == provider.client.client_id else None

            def save_token(self, token, request):
                provider.tokens[token["access_token"]] = request.user

            def send_signal(self, name, *args, **kwargs):
                pass

            def handle_response(self, status, body, headers):
                return status, body, headers

            def create_oauth2_request(self, request):
                return request

            def create_json_request(self, request):
                return request

        return Server

    def _code_grant_class(self) -> type[AuthorizationCodeGrant]:
        """The authorization-code grant keeping its codes in this provider."""
        provider = self

        class CodeGrant(AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_post", "client_secret_basic"]

            def save_authorization_code(self, code, request):
                provider.codes[code] = Code(
                    code=code,
                    client_id=request.client.client_id,
                    redirect_uri=request.payload.redirect_uri,
                    scope=request.scope,
                    user=request.user,
                    nonce=request.payload.data.get("nonce"),
                    auth_time=int(time.time()),
                    code_challenge=request.payload.data.get("code_challenge"),
                    code_challenge_method=request.payload.data.get("code_challenge_method"),
                )

            def query_authorization_code(self, code, client):
                found = provider.codes.get(code)
                return found if found and found.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code):
                provider.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code):
                return authorization_code.user

        return CodeGrant

    def _openid_class(self) -> type[OpenIDCode]:
        """OpenID Connect on the code grant: ID tokens signed with this provider's key."""
        provider = self

        class OpenID(OpenIDCode):
            def exists_nonce(self, nonce, request):
                return any(c.nonce == nonce for c in provider.codes.values())

            def resolve_client_private_key(self, client):
                return provider.key

            def get_client_algorithm(self, client):
                return "RS256"

            def get_encode_header(self, client):
                return {"alg": "RS256", "kid": KID}

            def get_client_claims(self, client):
                return {"iss": provider.issuer, "aud": [client.get_client_id()]}

            def generate_user_info(self, user, scope):
                return provider.user_info(user)

        return OpenID

    def user_info(self, username: str) -> UserInfo:
        person = self.users[username]
        return UserInfo(
            sub=person["sub"],
            email=person.get("email", ""),
            given_name=person.get("given_name", ""),
            family_name=person.get("family_name", ""),
            groups=person.get("groups", []),
        )

    # --- HTTP ----------------------------------------------------------------------------------

    def start(self) -> Provider:
        self.httpd = make_server("127.0.0.1", 0, self.app, handler_class=_QuietHandler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    @property
    def issuer(self) -> str:
        assert self.httpd is not None
        return f"http://127.0.0.1:{self.httpd.server_port}"

    def app(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "")
        query = dict(parse_qsl(environ.get("QUERY_STRING", "")))
        length = int(environ.get("CONTENT_LENGTH") or 0)
        form = dict(parse_qsl(environ["wsgi.input"].read(length).decode())) if length else {}
        headers = {
            key[5:].replace("_", "-").title(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        uri = f"{self.issuer}{path}?{environ.get('QUERY_STRING', '')}"
        request = Request(method, uri, headers, query, form)
        if path == "/.well-known/openid-configuration":
            status, body, extra = 200, json.dumps(self.discovery()), [("Content-Type", "application/json")]
        elif path == "/jwks":
            keys = {"keys": [self.key.as_dict(private=False)]}
            status, body, extra = 200, json.dumps(keys), [("Content-Type", "application/json")]
        elif path == "/authorize":
            status, body, extra = self.authorize(request, method, query, form)
        elif path == "/token" and method == "POST":
            self.token_requests += 1
            status, body, extra = self.server.create_token_response(request)
            body = json.dumps(body) if isinstance(body, dict) else body
        elif path == "/userinfo":
            status, body, extra = self.userinfo(headers.get("Authorization", ""))
        else:
            status, body, extra = 404, "not found", [("Content-Type", "text/plain")]
        reason = {200: "OK", 302: "Found", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
        start_response(f"{status} {reason.get(status, 'Error')}", list(extra))
        return [body.encode() if isinstance(body, str) else body]

    def discovery(self) -> dict:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def authorize(self, request: Request, method: str, query: dict, form: dict):
        """GET: the login form (the authorization request's parameters kept in it). POST: the
        credentials; right ones grant, "deny" refuses (access_denied), wrong ones show the form."""
        if method == "GET":
            return 200, self.login_form(query, error=""), [("Content-Type", "text/html")]
        params = {k: v for k, v in form.items() if k not in {"username", "password", "deny"}}
        request = Request("GET", f"{self.issuer}/authorize?{urlencode(params)}", request.headers, params, {})
        grant = self.server.get_consent_grant(request)
        if "deny" in form:
            return self.server.create_authorization_response(request, grant_user=None, grant=grant)
        person = self.users.get(form.get("username", ""))
        if person is None or not secrets.compare_digest(person["password"], form.get("password", "")):
            return (
                200,
                self.login_form(params, error="Wrong username or password."),
                [("Content-Type", "text/html")],
            )
        return self.server.create_authorization_response(request, grant_user=form["username"], grant=grant)

    def login_form(self, params: dict, *, error: str) -> str:
        hidden = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in params.items()
        )
        return (
            f"<html><body><h1>Synthetic hospital sign-in</h1><p id='error'>{html.escape(error)}</p>"
            f"<form method='post' action='/authorize'>{hidden}"
            "<input name='username' id='username'><input name='password' id='password' type='password'>"
            "<button type='submit' id='signin'>Sign in</button>"
            "<button type='submit' name='deny' value='1' id='deny'>Cancel</button></form></body></html>"
        )

    def userinfo(self, authorization: str):
        token = authorization.removeprefix("Bearer ").strip()
        username = self.tokens.get(token)
        if username is None:
            return 401, json.dumps({"error": "invalid_token"}), [("Content-Type", "application/json")]
        return 200, json.dumps(dict(self.user_info(username))), [("Content-Type", "application/json")]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass
