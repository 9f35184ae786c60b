"""Request ids: taken from ``X-Request-ID`` or made, returned, and put in every problem
document and event of the request, so one id ties a caller's report to the service's."""

from __future__ import annotations

import os
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.context import request_id as current

HEADER = b"x-request-id"
OWN_HEADER = b"x-contextsynth-request-id"
# An id a caller sends is kept when it is short and plain: it ends up in logs and headers.
_ACCEPTED = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers", [])).get(HEADER)
        rid = sent.decode() if sent is not None and _ACCEPTED.fullmatch(sent) \
            else os.urandom(16).hex()
        token = current.set(rid)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                # A proxied answer carries the provider's own request id, which its SDK
                # reports: that one stays, and this service's goes beside it.
                mine = OWN_HEADER if any(k == HEADER for k, _ in headers) else HEADER
                message = {**message, "headers": [*headers, (mine, rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(token)
