"""The official MCP Python SDK (`mcp` 2.x) against `mrtr serve --oauth-issuer`.

Run by `scripts/python-sdk.sh test`, which starts node-oidc-provider
(tests/oauth/provider.mjs) and mrtr serve, then runs this with the venv's python:

    python tests/oauth/python_client.py --url http://127.0.0.1:PORT/mcp --issuer ISSUER

Everything OAuth here is the SDK's own: `mcp.client.auth.OAuthClientProvider`
discovers the authorization server from the 401's WWW-Authenticate
(RFC 9728 protected resource metadata, then RFC 8414 / OIDC metadata),
registers a client (RFC 7591), runs the authorization code flow with PKCE and
the `resource` parameter (RFC 8707), and retries with the token. This script
only plays the user: its redirect handler runs tests/oauth/browser.mjs
--no-follow as alice and its callback handler returns the code and state the
browser printed (no loopback listener). The elicitation callback answers the
reference tools' forms.

Checks are printed as `ok - ...` / `not ok - ...`; the last line is
`python-sdk-oauth: N passed, M failed`, exit status 1 on any failure. Tokens,
codes and secrets are never printed whole (first 6 characters and `…`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

HERE = Path(__file__).resolve().parent
USER = "alice"
NAME = "Ada"
COLOUR = "blue"


def redact(value: str | None) -> str:
    if not value:
        return repr(value)
    return f"{value[:6]}…"


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok - {what}" + (f" ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            print(f"not ok - {what}" + (f": {detail}" if detail else ""), flush=True)
        return ok


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory, counting what it was given."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.token_sets = 0
        self.client_info_sets = 0

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.token_sets += 1

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info
        self.client_info_sets += 1


class Browser:
    """The user: redirect_handler runs browser.mjs --no-follow, callback_handler returns its result."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.authorization_urls: list[str] = []
        self.result: dict[str, Any] | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorization_urls.append(authorization_url)
        done = await anyio.run_process(
            [self.node, str(HERE / "browser.mjs"), "--user", USER, "--no-follow", authorization_url],
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"browser.mjs failed: {done.stderr.decode(errors='replace').strip()}")
        self.result = json.loads(done.stdout)
        print(
            f"# browser: {USER} signed in and allowed; code={redact(self.result.get('code'))} "
            f"state={redact(self.result.get('state'))} iss={self.result.get('iss')}",
            flush=True,
        )

    async def callback_handler(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("callback_handler called before the browser ran")
        result, self.result = self.result, None
        return AuthorizationCodeResult(code=result["code"], state=result.get("state"), iss=result.get("iss"))


class Traffic:
    """An httpx2 response hook: every request the SDK made (MCP and OAuth), without bodies."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        self.entries.append(
            {
                "method": request.method,
                "url": str(request.url.copy_with(query=None)),
                "status": response.status_code,
                "bearer": request.headers.get("authorization", "").lower().startswith("bearer "),
                "www_authenticate": response.headers.get("www-authenticate"),
            }
        )

    def show(self) -> None:
        for e in self.entries:
            auth = " [Bearer]" if e["bearer"] else ""
            print(f"# http: {e['method']} {e['url']}{auth} -> {e['status']}", flush=True)


class Forms:
    """The elicitation callback: answers each form from its schema."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        schema = params.requested_schema
        schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
        properties: dict[str, Any] = schema.get("properties", {})
        content: dict[str, Any] = {}
        for key, prop in properties.items():
            content[key] = answer(key, prop)
        self.asked.append({"message": params.message, "fields": list(properties), "answer": content})
        print(f"# form: {params.message!r} fields={list(properties)} -> {content}", flush=True)
        return types.ElicitResult(action="accept", content=content)


def answer(key: str, prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    choices = prop.get("enum") or [o.get("const") for o in prop.get("oneOf", []) if "const" in o]
    if choices:
        return COLOUR if COLOUR in choices else choices[0]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return prop.get("minimum", 1)
    if "colo" in key.lower():
        return COLOUR
    return NAME


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (mrtr serve verified it); only its claims are shown."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def text_of(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def run(args: argparse.Namespace, checks: Checks) -> None:
    storage = MemoryStorage()
    browser = Browser(args.node)
    traffic = Traffic()
    forms = Forms()
    oauth = OAuthClientProvider(
        server_url=args.url,
        client_metadata=OAuthClientMetadata(
            client_name="mcp python sdk (mrtr e2e)",
            redirect_uris=["http://127.0.0.1:8976/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    http = httpx2.AsyncClient(
        auth=oauth,
        timeout=httpx2.Timeout(30.0),
        event_hooks={"response": [traffic.on_response]},
    )
    try:
        async with http:
            client = Client(
                streamable_http_client(args.url, http_client=http),
                mode=args.mode,
                elicitation_callback=forms,
            )
            async with client:
                print(f"# connected: protocol {client.protocol_version}", flush=True)
                r1 = await client.call_tool("test_input_required_result_elicitation", {})
                t1 = text_of(r1)
                print(f"# elicitation result: {t1!r}", flush=True)
                checks.check(
                    not r1.is_error and NAME in t1,
                    "test_input_required_result_elicitation completes with the answered name",
                    t1,
                )
                asked_before = len(forms.asked)
                r2 = await client.call_tool("test_input_required_result_multi_round", {})
                t2 = text_of(r2)
                print(f"# multi-round result: {t2!r}", flush=True)
                rounds = len(forms.asked) - asked_before
                checks.check(
                    not r2.is_error and rounds >= 2,
                    "test_input_required_result_multi_round completes after two forms",
                    f"{rounds} forms",
                )
    finally:
        traffic.show()

    # --- the OAuth side, from what the SDK actually sent and got ---
    mcp_calls = [e for e in traffic.entries if e["url"] == args.url and e["method"] == "POST"]
    first = mcp_calls[0] if mcp_calls else None
    checks.check(
        first is not None and first["status"] == 401 and not first["bearer"],
        "the first MCP request (no token) was refused with 401",
        f"{first['status'] if first else None}",
    )
    challenge = (first or {}).get("www_authenticate") or ""
    checks.check(
        challenge.lower().startswith("bearer ") and "resource_metadata=" in challenge,
        "the 401 carried WWW-Authenticate: Bearer resource_metadata=...",
        challenge,
    )
    urls = [(e["method"], e["url"], e["status"]) for e in traffic.entries]
    prm = urlparse(args.url)
    prm_url = f"{prm.scheme}://{prm.netloc}/.well-known/oauth-protected-resource{prm.path}"
    checks.check(("GET", prm_url, 200) in urls, "the SDK fetched the protected resource metadata (RFC 9728)", prm_url)
    checks.check(
        any(m == "GET" and u.startswith(args.issuer + "/.well-known/") and s == 200 for m, u, s in urls),
        "the SDK fetched the authorization server metadata",
        ", ".join(u for m, u, s in urls if u.startswith(args.issuer + "/.well-known/")),
    )
    checks.check(
        storage.client_info is not None and storage.client_info_sets == 1,
        "the SDK registered a client dynamically (RFC 7591) and stored it",
        f"client_id={redact(storage.client_info.client_id if storage.client_info else None)}",
    )
    query = parse_qs(urlparse(browser.authorization_urls[0]).query) if browser.authorization_urls else {}
    checks.check(
        len(browser.authorization_urls) == 1
        and query.get("code_challenge_method") == ["S256"]
        and bool(query.get("code_challenge"))
        and query.get("resource") == [args.url],
        "one authorization request, with PKCE S256 and resource = the MCP URL",
        f"resource={query.get('resource')} scope={query.get('scope')} prompt={query.get('prompt')}",
    )
    token = storage.tokens
    checks.check(
        token is not None and bool(token.access_token) and token.token_type.lower() == "bearer",
        "the SDK got an access token and stored it",
        f"access_token={redact(token.access_token if token else None)} "
        f"refresh_token={redact(token.refresh_token if token else None)} scope={token.scope if token else None}",
    )
    claims = jwt_claims(token.access_token) if token and token.access_token.count(".") == 2 else {}
    aud = claims.get("aud")
    checks.check(
        claims.get("iss") == args.issuer and claims.get("sub") == USER and args.url in ([aud] if isinstance(aud, str) else aud or []),
        f"the access token is the provider's JWT for {USER}, audience the MCP URL",
        f"iss={claims.get('iss')} sub={claims.get('sub')} aud={aud} scope={claims.get('scope')}",
    )
    later = mcp_calls[1:]
    checks.check(
        bool(later) and all(e["bearer"] and e["status"] == 200 for e in later),
        "every later MCP request carried the Bearer token and got 200",
        f"{len(later)} requests",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    parser.add_argument("--issuer", required=True, help="the authorization server's issuer")
    parser.add_argument("--node", default=os.environ.get("NODE", "node"))
    parser.add_argument("--mode", default="auto", help="Client mode: auto (server/discover) or a version")
    args = parser.parse_args()
    checks = Checks()
    try:
        anyio.run(run, args, checks)
    except BaseException as exc:  # noqa: BLE001 - any failure is a failed check, with its trace
        traceback.print_exc()
        checks.check(False, "the flow ran to the end", f"{type(exc).__name__}: {exc}")
    print(f"python-sdk-oauth: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
