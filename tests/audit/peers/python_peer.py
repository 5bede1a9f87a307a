"""MRTR audit peer on the official MCP Python SDK (`mcp` 2.3.0 from PyPI).

A black-box target for `mrtr audit`: an `MCPServer` whose `requestState` is
protected exactly the way the SDK documents it, with `RequestStateSecurity`
(the default `RequestStateBoundary`: AES-256-GCM under an HKDF-derived key,
`v1.` prefix, 4-byte key fingerprint, claims envelope with iat/exp, method,
target, arguments digest, audience = server name, salted principal hash).
Nothing here hardens or weakens that protection.

Fixture surface (same on every audit peer):
  tool   confirm_action {item}: form elicitation key `confirm` (boolean
         `confirm`), then `done: <item>` or `cancelled: <item>`.
  tool   ask_name {}: form elicitation key `name` (string `name`), then
         `Hello, <name>!`.
  prompt review: form elicitation key `focus` (string `focus`), then one user
         message.
Handlers build the `InputRequiredResult` themselves (the SDK's hand-built tier:
`ctx.input_responses` / `ctx.request_state`) because the resolver tier names
its wire keys `module:qualname`, not the fixture's keys.  Each handler only
accepts an answer when the (verified, plaintext) `request_state` says the
question was asked; otherwise it asks again.

Toy authentication: `Authorization: Bearer alice-token` is alice, `Bearer
bob-token` is bob, anything else (or nothing) is anonymous. The SDK's own
`BearerAuthBackend` + `AuthContextMiddleware` put the `AccessToken` in
context, and `RequestStateSecurity`'s default `bind_principal`
(`authenticated_principal`: client id, issuer, subject) binds states to it.

Environment:
  PEER_STATE_KEY  state key; the SDK wants >= 32 bytes, so the key given to
                  RequestStateSecurity(keys=[...]) is SHA-256(PEER_STATE_KEY)
                  (32 raw bytes). Unset: RequestStateSecurity.ephemeral()
                  (a random per-process key, the SDK default).
  PEER_STATE_TTL  ttl= in seconds (default: the SDK's 600).
  PEER_PORT       port on 127.0.0.1 (default 0 = any free port).
Prints `listening on http://127.0.0.1:PORT/mcp` on stderr when ready.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import sys
from typing import Any

import uvicorn
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
)
from starlette.middleware.authentication import AuthenticationMiddleware

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.request_state import RequestStateSecurity

SERVER_NAME = "mrtr-audit-peer"
USERS = {"alice-token": "alice", "bob-token": "bob"}


class ToyTokenVerifier:
    """`TokenVerifier` for the two fixed toy tokens; unknown tokens are anonymous."""

    async def verify_token(self, token: str) -> AccessToken | None:
        user = USERS.get(token)
        if user is None:
            return None
        return AccessToken(token=token, client_id="audit-client", scopes=[], subject=user)


def security_from_env() -> RequestStateSecurity:
    ttl_text = os.environ.get("PEER_STATE_TTL", "")
    kwargs: dict[str, Any] = {}
    if ttl_text:
        kwargs["ttl"] = float(ttl_text)
    key_text = os.environ.get("PEER_STATE_KEY")
    if key_text is None or key_text == "":
        return RequestStateSecurity.ephemeral(**kwargs)
    key = hashlib.sha256(key_text.encode()).digest()
    return RequestStateSecurity(keys=[key], **kwargs)


mcp = MCPServer(SERVER_NAME, request_state_security=security_from_env())


def form(key: str, message: str, prop: dict[str, Any]) -> dict[str, ElicitRequest]:
    schema = {"type": "object", "properties": {key: prop}, "required": [key]}
    return {
        key: ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema)),
    }


def asked(ctx: Context, key: str) -> bool:
    """True when the verified plaintext state says `key` was asked."""
    if ctx.request_state is None:
        return False
    try:
        return json.loads(ctx.request_state).get("asked") == key
    except ValueError:
        return False


def answer(ctx: Context, key: str) -> Any:
    """The elicitation answer for `key`, or None when missing or of the wrong kind."""
    responses = ctx.input_responses or {}
    res = responses.get(key)
    return res if getattr(res, "action", None) is not None else None


@mcp.tool()
async def confirm_action(item: str, ctx: Context) -> str | InputRequiredResult:
    """Ask the user to confirm an action on `item`."""
    res = answer(ctx, "confirm")
    if res is None or not asked(ctx, "confirm"):
        return InputRequiredResult(
            input_requests=form("confirm", f"Confirm the action on {item}?", {"type": "boolean"}),
            request_state=json.dumps({"asked": "confirm", "item": item}),
        )
    if res.action == "accept" and (res.content or {}).get("confirm") is True:
        return f"done: {item}"
    return f"cancelled: {item}"


@mcp.tool()
async def ask_name(ctx: Context) -> str | InputRequiredResult:
    """Ask the user's name and greet them."""
    res = answer(ctx, "name")
    name = (res.content or {}).get("name") if res is not None and res.action == "accept" else None
    if not isinstance(name, str) or not asked(ctx, "name"):
        return InputRequiredResult(
            input_requests=form("name", "What is your name?", {"type": "string"}),
            request_state=json.dumps({"asked": "name"}),
        )
    return f"Hello, {name}!"


@mcp.prompt()
async def review(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    """A review prompt that asks what to focus on."""
    res = answer(ctx, "focus")
    focus = (res.content or {}).get("focus") if res is not None and res.action == "accept" else None
    if not isinstance(focus, str) or not asked(ctx, "focus"):
        return InputRequiredResult(
            input_requests=form("focus", "What should the review focus on?", {"type": "string"}),
            request_state=json.dumps({"asked": "focus"}),
        )
    return [UserMessage(f"Please review the code, focusing on {focus}.")]


async def main() -> None:
    port = int(os.environ.get("PEER_PORT", "0") or 0)
    app = mcp.streamable_http_app(json_response=True)
    # The SDK's bearer backend without RequireAuthMiddleware: anonymous stays allowed.
    app.add_middleware(AuthContextMiddleware)
    app.add_middleware(AuthenticationMiddleware, backend=BearerAuthBackend(ToyTokenVerifier()))

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.02)
    print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main())
