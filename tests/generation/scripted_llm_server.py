"""A real OpenAI-compatible HTTP server on loopback, scripted per agent, for tests and benchmarks.

It serves POST /v1/chat/completions and GET /v1/models on 127.0.0.1 (a free port), works out which
agent is speaking from the prompt text (the seed-003 personas → radiologist / patient, the
Processor's question → processor, anything else → generator), answers from a per-agent script,
and records every request. Failures can be injected: an HTTP status for the next N requests, a
delay (longer than a client's timeout), a fixed latency on every request, or a garbled answer
(GARBLES: an HTML page, invalid or truncated JSON, no choices, an empty message) for the next N
requests or, with `garble_all`, for every request until it is switched off.

    with ScriptedLLMServer() as server:
        server.script("processor", ["Yes, explain 'lesion'.", "No"])
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RADIOLOGIST_MARK = "You are an experienced radiologist"
PATIENT_MARK = "You are a person who does not have any medical knowledge"
PROCESSOR_MARK = "Are there any critical comments"


def recognise_agent(messages: list[dict[str, Any]]) -> str:
    first = " ".join(str(m.get("content", "")) for m in messages if m.get("role") in ("system", "user"))
    if RADIOLOGIST_MARK in first:
        return "radiologist"
    if PATIENT_MARK in first:
        return "patient"
    if PROCESSOR_MARK in first:
        return "processor"
    return "generator"


def count_tokens(text: str) -> int:
    """A stand-in tokenizer: whitespace-separated words (deterministic, so tests can check sums)."""
    return len(text.split())


@dataclass
class RecordedRequest:
    path: str
    agent: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]  # the request body without "messages"
    status: int = 200
    answer: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """A scripted answer with a finish_reason other than "stop" (e.g. "length" for a cut-off answer)."""

    text: str
    finish_reason: str = "stop"


Responder = Callable[[RecordedRequest], "str | Answer"]

# Garbled 200 answers: (content type, body). "empty" is a well-formed completion with no text.
GARBLES: dict[str, tuple[str, bytes]] = {
    "html": ("text/html", b"<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"),
    "invalid-json": ("application/json", b'{"id": "chatcmpl-x", "choices": [{"index": 0, "message": '),
    "truncated": ("application/json", b'{"id": "chatcmpl-x", "object": "chat.completion", "choi'),
    "no-choices": (
        "application/json",
        b'{"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}',
    ),
    "empty": ("", b""),
}

DEFAULT_ANSWERS: dict[str, str] = {
    "generator": "There are two spots in the liver.",
    "radiologist": "The simplification is correct and complete.",
    "patient": "I understand every word.",
    "processor": "No",
}


class ScriptedLLMServer:
    def __init__(self, *, model: str = "scripted-model") -> None:
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.latency = 0.0
        self._scripts: dict[str, deque[str | Answer | Responder]] = defaultdict(deque)
        self._fallback: dict[str, str | Answer | Responder] = dict(DEFAULT_ANSWERS)
        self._failures: deque[tuple[int, dict[str, str]]] = deque()
        self._delays: deque[float] = deque()
        self._garbles: deque[str] = deque()
        self._garble_all: str | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------------
    def script(self, agent: str, answers: list[str | Answer | Responder]) -> None:
        """Answers for `agent`'s next calls, in order; afterwards the agent's fallback answers."""
        with self._lock:
            self._scripts[agent].extend(answers)

    def set_fallback(self, agent: str, answer: str | Answer | Responder) -> None:
        with self._lock:
            self._fallback[agent] = answer

    def fail_next(self, status: int = 500, *, times: int = 1, headers: dict[str, str] | None = None) -> None:
        """The next `times` chat requests get HTTP `status` (an OpenAI-style error body)."""
        with self._lock:
            self._failures.extend([(status, dict(headers or {}))] * times)

    def garble_next(self, kind: str, *, times: int = 1) -> None:
        """The next `times` chat requests get a garbled 200 answer of `kind` (a key of GARBLES)."""
        assert kind in GARBLES, kind
        with self._lock:
            self._garbles.extend([kind] * times)

    def garble_all(self, kind: str | None) -> None:
        """Every chat request gets a garbled answer of `kind` until called with None."""
        assert kind is None or kind in GARBLES, kind
        with self._lock:
            self._garble_all = kind

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        """The next `times` chat requests wait `seconds` before answering."""
        with self._lock:
            self._delays.extend([seconds] * times)

    def chat_requests(self, agent: str | None = None, *, status: int | None = 200) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.endswith("/chat/completions")
                and (agent is None or r.agent == agent)
                and (status is None or r.status == status)
            ]

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ScriptedLLMServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on an injected delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling (server threads) ----------------------------------------------------------
    def _answer(self, request: RecordedRequest) -> Answer:
        with self._lock:
            queue = self._scripts[request.agent]
            item = queue.popleft() if queue else self._fallback[request.agent]
        answer = item(request) if callable(item) else item
        return answer if isinstance(answer, Answer) else Answer(answer)

    def _handle_chat(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, Any] | bytes, dict[str, str]]:
        messages = body.get("messages", [])
        request = RecordedRequest(
            path="/v1/chat/completions",
            agent=recognise_agent(messages),
            messages=messages,
            params={k: v for k, v in body.items() if k != "messages"},
            headers=headers,
        )
        with self._lock:
            self.requests.append(request)
            failure = self._failures.popleft() if self._failures else None
            garble = self._garbles.popleft() if self._garbles else self._garble_all
            delay = (self._delays.popleft() if self._delays else 0.0) + self.latency
        if delay:
            self._stopping.wait(delay)
        if failure is not None:
            status, extra_headers = failure
            request.status = status
            error = {"error": {"message": f"injected HTTP {status}", "type": "server_error", "code": None}}
            return status, error, extra_headers
        if garble is not None and garble != "empty":
            request.status = -200  # a 200 the client cannot use; not counted as a plain 200
            content_type, body = GARBLES[garble]
            return 200, body, {"Content-Type": content_type}
        answer = Answer("") if garble == "empty" else self._answer(request)
        request.answer = answer.text
        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) for m in messages)
        completion_tokens = count_tokens(answer.text)
        with self._lock:
            number = len(self.requests)
        return (
            200,
            {
                "id": f"chatcmpl-scripted-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", self.model),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer.text},
                        "finish_reason": answer.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
            {},
        )


def _handler_for(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; without TCP_NODELAY the second waits for a delayed ACK
        # (~40 ms a request), which would make the suite slow for nothing.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            pass

        def _send(
            self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None
        ) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            headers = {"Content-Type": "application/json", **(headers or {})}
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout fired while we were delaying)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.rstrip("/") == "/v1/models":
                with server._lock:
                    server.requests.append(
                        RecordedRequest(path="/v1/models", agent="", messages=[], params={})
                    )
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": server.model, "object": "model", "created": 0, "owned_by": "radlay-tests"}
                        ],
                    },
                )
            else:
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                )

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                )
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
                return
            status, payload, headers = server._handle_chat(
                body, {k.lower(): v for k, v in self.headers.items()}
            )
            self._send(status, payload, headers)

    return Handler
