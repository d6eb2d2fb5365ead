"""Remote MCP through the official MCP Python SDK's OAuth client: the 401 at /mcp points at
the protected-resource metadata (RFC 9728), the SDK discovers the authorization server
(RFC 8414), registers itself (RFC 7591), sends the person to /oauth/authorize with PKCE (S256)
and a resource indicator (RFC 8707); this test plays the person, answering the sign-in and
consent forms over HTTP; the SDK exchanges the code and lists the tools with the access token.

usage: oauth_test.py   (environment: MAIL_URL, MAIL_OAUTH_EMAIL, MAIL_OAUTH_PASSWORD: a sign-in
                        account made with `admin mail create-sign-in`)
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

MAIL_URL = os.environ["MAIL_URL"].rstrip("/")
EMAIL = os.environ["MAIL_OAUTH_EMAIL"]
PASSWORD = os.environ["MAIL_OAUTH_PASSWORD"]
REDIRECT = "http://127.0.0.1:33418/callback"


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    check(found is not None, f"no hidden {name} in the page")
    return html.unescape(found.group(1))


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """The browser: signs in and approves, then hands the redirect's parameters to the SDK."""

    def __init__(self) -> None:
        self.browser = httpx2.AsyncClient(follow_redirects=False, timeout=30)
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []

    async def visit(self, authorization_url: str) -> None:
        check(authorization_url.startswith(f"{MAIL_URL}/oauth/authorize?"), authorization_url)
        query = parse_qs(urlparse(authorization_url).query)
        check(query.get("code_challenge_method") == ["S256"], f"PKCE S256: {query}")
        check(query.get("resource") == [f"{MAIL_URL}/mcp"], f"resource indicator: {query}")
        page = await self.browser.get(authorization_url)
        check(page.status_code == 200, f"authorize: {page.status_code} {page.text}")
        if 'name="password"' in page.text:
            self.pages.append("sign-in")
            signed_in = await self.browser.post(
                f"{MAIL_URL}/oauth/authorize/sign-in",
                data={
                    "csrf": hidden(page.text, "csrf"),
                    "request": hidden(page.text, "request"),
                    "email": EMAIL,
                    "password": PASSWORD,
                },
            )
            check(signed_in.status_code == 303, f"sign-in: {signed_in.status_code} {signed_in.text}")
            page = await self.browser.get(f"{MAIL_URL}{signed_in.headers['location']}")
        check("Allow" in page.text and "/mcp" in page.text, f"consent page: {page.text}")
        self.pages.append("consent")
        approved = await self.browser.post(
            f"{MAIL_URL}/oauth/authorize/consent",
            data={
                "csrf": hidden(page.text, "csrf"),
                "request": hidden(page.text, "request"),
                "decision": "approve",
            },
        )
        check(approved.status_code == 303, f"consent: {approved.status_code}")
        location = approved.headers["location"]
        check(location.startswith(REDIRECT), location)
        params = parse_qs(urlparse(location).query)
        self.result = AuthorizationCodeResult(
            code=params["code"][0],
            state=params.get("state", [None])[0],
            iss=params.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        check(self.result is not None, "no authorization happened")
        return self.result


async def main() -> int:
    unauthenticated = httpx2.post(f"{MAIL_URL}/mcp", json={})
    check(unauthenticated.status_code == 401, f"/mcp without a token: {unauthenticated.status_code}")
    challenge = unauthenticated.headers.get("www-authenticate", "")
    check("resource_metadata=" in challenge, f"WWW-Authenticate: {challenge}")

    person = Person()
    storage = Memory()
    provider = OAuthClientProvider(
        server_url=f"{MAIL_URL}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="MCP SDK OAuth test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="read write",
        ),
        storage=storage,
        redirect_handler=person.visit,
        callback_handler=person.callback,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(f"{MAIL_URL}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
    names = {tool.name for tool in tools.tools}
    check({"get_sites", "list_campaigns", "create_site"} <= names, f"tools: {sorted(names)[:10]}…")
    check(person.pages == ["sign-in", "consent"], f"pages: {person.pages}")
    check(storage.client is not None, "the client registered itself")
    check(storage.tokens is not None and storage.tokens.access_token.startswith("mailo_"), "a mailo_ token")
    print(f"ok   oauth: discovery, registration, PKCE, sign-in, consent, {len(names)} tools listed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except Exception as failure:  # noqa: BLE001 - one line per failure
        while isinstance(failure, BaseExceptionGroup) and len(failure.exceptions) == 1:
            failure = failure.exceptions[0]
        print(f"FAIL oauth: {failure!r}")
        sys.exit(1)
