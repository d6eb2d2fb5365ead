"""The MCP server through the official MCP Python SDK: over streamable HTTP (`/mcp`) and over
stdio (the `mail-mcp` binary, which calls the REST mirror), the same checks.

usage: sdk_test.py   (environment: MAIL_URL, MAIL_KEY (an admin key of an enterprise project),
                      MAIL_PROJECT_ID, MAIL_MCP (the mail-mcp binary))

For each transport: initialize; the listed tools are the mirror's listing for that key; every
listed input schema compiles as JSON Schema 2020-12 and is what clients that compile schemas
require (a top-level object with `properties` and `additionalProperties: false`, no top-level
`allOf`/`oneOf`/`anyOf`, every `$ref` resolved inside it); one tool of every group the server
implements is called and its effect read back through REST; a misspelled argument is refused
naming it and the name it meant; an unknown tool is the JSON-RPC error -32602; a key limited
to tool groups sees and calls only their tools; a destructive tool without its confirmation
token changes nothing, and with it acts once. The REST mirror's listing and its OpenAPI
document are held to the same schema rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import jsonschema
import referencing
import referencing.exceptions
from referencing.jsonschema import DRAFT202012
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

MAIL_URL = os.environ["MAIL_URL"].rstrip("/")
ADMIN = os.environ["MAIL_KEY"]
PROJECT = os.environ["MAIL_PROJECT_ID"]
MAIL_MCP = os.environ["MAIL_MCP"]


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def rest(method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{MAIL_URL}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as refused:
        status, text = refused.code, refused.read()
    return status, (json.loads(text) if text.strip() else None)


def rest_ok(method: str, path: str, key: str, body: Any = None) -> Any:
    status, answer = rest(method, path, key, body)
    check(200 <= status < 300, f"{method} {path} answered {status}: {answer}")
    return answer


def new_key(scope: str, groups: list[str] | None = None) -> tuple[str, str]:
    body: dict[str, Any] = {"name": f"sdk-{scope}", "scope": scope}
    if groups is not None:
        body["tool_groups"] = groups
    created = rest_ok("POST", "/api/v1/api-keys", ADMIN, body)
    return created["id"], created["secret"]


@contextlib.asynccontextmanager
async def over_http(key: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(f"{MAIL_URL}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def over_stdio(key: str) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(
        command=MAIL_MCP,
        env={"MAIL_API_KEY": key, "MAIL_API_URL": MAIL_URL, "MAIL_PROJECT_ID": PROJECT},
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


TRANSPORTS = {"streamable HTTP": over_http, "stdio": over_stdio}


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(name, arguments)
    check(not result.is_error, f"{name} failed: {result.structured_content or result.content}")
    return result.structured_content


async def refused(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    check(result.is_error, f"{name} was not refused: {result.structured_content}")
    return result.structured_content


def ids(listing: Any, key: str) -> set[str]:
    return {item["id"] for item in listing[key]}


# One tool of each group, called with real arguments; each returns a check of its effect made
# through REST. A group the server implements without an entry here fails the run.
async def sites(s: ClientSession, tag: str) -> None:
    site = await call(s, "create_site", {"name": f"Site {tag}", "slug": f"site-{tag}", "from_name": "SDK"})
    check(site["id"] in ids(rest_ok("GET", "/api/v1/sites", ADMIN), "data"), "create_site: no such site")


async def contacts(s: ClientSession, tag: str) -> None:
    email = f"sdk-{tag}@example.com"
    contact = await call(s, "add_subscriber", {"email": email, "site_id": SITE})
    listed = rest_ok("GET", f"/api/v1/contacts?search=sdk-{tag}", ADMIN)["data"]
    check([c["contact_id"] for c in listed] == [contact["contact_id"]], f"add_subscriber: {listed}")


async def templates(s: ClientSession, tag: str) -> None:
    template = await call(s, "create_template", {"name": f"Template {tag}", "brief": "Say hello", "html": "<p>Hi {{first_name}}</p>"})
    check(template["id"] in ids(rest_ok("GET", "/api/v1/templates", ADMIN), "data"), "create_template")


async def campaigns(s: ClientSession, tag: str) -> None:
    sent = await call(s, "send_transactional", {"to": f"to-{tag}@example.com", "site_id": SITE, "subject": tag, "html": "<p>Hi</p>"})
    email = rest_ok("GET", f"/api/v1/emails/{sent['id']}", ADMIN)
    check(email["to"] == f"to-{tag}@example.com", f"send_transactional: {email}")


async def analytics(s: ClientSession, tag: str) -> None:
    listed = await call(s, "get_sites", {})
    check(SITE in ids(listed, "data"), f"get_sites does not list the site: {listed}")


async def org(s: ClientSession, tag: str) -> None:
    limits = await call(s, "get_plan_limits", {})
    plan = rest_ok("GET", "/api/v1/plan", ADMIN)
    check(limits["plan"] == plan["plan"] == "enterprise", f"get_plan_limits: {limits}")
    check(limits["contacts"] == plan["contacts"], f"get_plan_limits: {limits} against {plan}")


async def data(s: ClientSession, tag: str) -> None:
    key_id, _ = new_key("read")
    listed = await call(s, "list_api_keys", {})
    check(key_id in ids(listed, "keys"), "list_api_keys does not list a new key")


async def delivery_ops(s: ClientSession, tag: str) -> None:
    status = await call(s, "get_queue_status", {})
    check(isinstance(status.get("queues"), list) and status["queues"], f"get_queue_status: {status}")


async def segments(s: ClientSession, tag: str) -> None:
    rules = {"all": [{"field": "email", "op": "contains", "value": f"sdk-{tag}"}]}
    segment = await call(s, "create_segment", {"name": f"Segment {tag}", "rules": rules})
    stored = rest_ok("GET", f"/api/v1/segments/{segment['id']}", ADMIN)
    check(stored["rules"] == rules, f"create_segment: stored {stored}")
    preview = await call(s, "preview_segment", {"segment_id": segment["id"]})
    counted = rest_ok("POST", "/api/v1/segments/preview", ADMIN, {"rules": rules})
    check(preview["count"] == counted["count"], f"preview_segment: {preview} vs {counted}")


async def gdpr(s: ClientSession, tag: str) -> None:
    contact = rest_ok("POST", "/api/v1/contacts", ADMIN, {"email": f"erase-{tag}@example.com", "site_id": SITE})
    arguments = {"contact_id": contact["contact_id"]}
    first = await call(s, "delete_subscriber_data", arguments)
    token = first["confirmation_token"]
    check(rest("GET", f"/api/v1/contacts/{contact['contact_id']}", ADMIN)[0] == 200, "erased without a token")
    await call(s, "delete_subscriber_data", arguments | {"confirmation_token": token})
    check(rest("GET", f"/api/v1/contacts/{contact['contact_id']}", ADMIN)[0] == 404, "the contact is still there")
    log = rest_ok("GET", "/api/v1/gdpr/deletion-log", ADMIN)["data"]
    check(contact["contact_id"] in {entry["contact_id"] for entry in log}, f"no deletion log entry: {log}")


async def warmup(s: ClientSession, tag: str) -> None:
    site = rest_ok("POST", "/api/v1/sites", ADMIN, {"name": f"Warm {tag}", "slug": f"warm-{tag}", "from_name": "SDK"})
    status = await call(s, "update_warmup_schedule", {"site_id": site["id"], "daily_limits": [7, 14]})
    check(status["state"] == "warming" and status["cap_today"] == 7, f"update_warmup_schedule: {status}")
    stored = rest_ok("GET", f"/api/v1/sites/{site['id']}/warmup", ADMIN)
    check(stored["daily_limits"] == [7, 14], f"update_warmup_schedule did not store it: {stored}")


async def webhooks(s: ClientSession, tag: str) -> None:
    url = f"https://hooks.example.com/sdk-{tag}"
    subscribed = await call(s, "subscribe_webhook", {"url": url, "events": ["email.bounced"]})
    check(subscribed["secret"].startswith("whsec_"), "subscribe_webhook shows no secret")
    listed = rest_ok("GET", "/api/v1/webhook-subscriptions?limit=100", ADMIN)["data"]
    stored = [w for w in listed if w["id"] == subscribed["id"]]
    check(len(stored) == 1 and stored[0]["url"] == url, f"subscribe_webhook: {stored}")
    check("secret" not in stored[0], "the secret is shown again")


async def forms(s: ClientSession, tag: str) -> None:
    form = await call(s, "create_form", {"site_id": SITE, "name": f"Form {tag}",
                                         "fields": [{"name": "first_name", "label": "First name"}]})
    stored = rest_ok("GET", f"/api/v1/forms/{form['id']}", ADMIN)
    check(stored["name"] == f"Form {tag}" and stored["url"].endswith(f"/f/{form['id']}"), f"create_form: {stored}")


async def social_posts(s: ClientSession, tag: str) -> None:
    post = await call(s, "create_social_post", {"title": f"Post {tag}", "content": "Hello", "platforms": ["mastodon"]})
    stored = rest_ok("GET", f"/api/v1/social/posts/{post['id']}", ADMIN)
    check(stored["title"] == f"Post {tag}" and stored["status"] == "draft", f"create_social_post: {stored}")
async def sms(s: ClientSession, tag: str) -> None:
    contact = rest_ok("POST", "/api/v1/identify", ADMIN, {"email": f"sms-{tag}@example.com", "site_id": SITE})
    phone = "+1415867" + str(uuid.uuid4().int % 10000).zfill(4)
    await call(s, "set_contact_sms_consent", {"contact_id": contact["contact_id"], "status": "revoked", "phone": phone})
    stored = rest_ok("PUT", f"/api/v1/sms/contacts/{contact['contact_id']}/consent", ADMIN, {"status": "revoked"})
    check(stored["phone"] == phone and stored["source"] == "api", f"set_contact_sms_consent: {stored}")
async def content(s: ClientSession, tag: str) -> None:
    name = "block_" + "".join(c for c in tag.lower() if c.isalnum())
    block = await call(s, "create_content_block", {"name": name, "html": f"<p>Block {tag}</p>"})
    stored = rest_ok("GET", f"/api/v1/content/blocks/{block['id']}", ADMIN)
    check(stored["name"] == name and stored["html"] == f"<p>Block {tag}</p>", f"create_content_block: {stored}")
async def automations(s: ClientSession, tag: str) -> None:
    body = {"site_id": SITE, "name": f"Flow {tag}", "trigger": {"type": "event", "event": f"flow.{tag}"},
            "steps": [{"type": "wait", "minutes": 60}, {"type": "add_tag", "tag": "flowed"}]}
    automation = rest_ok("POST", "/api/v1/automations", ADMIN, body)
    rest_ok("POST", f"/api/v1/automations/{automation['id']}/activate", ADMIN)
    contact = rest_ok("POST", "/api/v1/identify", ADMIN, {"email": f"flow-{tag}@example.com"})
    enrolled = await call(s, "enroll_automation", {"subscriber_id": contact["contact_id"],
                                                   "automation_id": automation["id"]})
    stored = rest_ok("GET", f"/api/v1/automations/{automation['id']}", ADMIN)
    check(enrolled["created"] and stored["enrollments"]["active"] == 1, f"enroll_automation: {stored}")


async def drafts(s: ClientSession, tag: str) -> None:
    draft = await call(s, "create_draft", {"site_id": SITE, "subject": f"Draft {tag}", "body_html": "<p>Hi</p>"})
    stored = rest_ok("GET", f"/api/v1/drafts/{draft['id']}", ADMIN)
    check(stored["status"] == "pending" and stored["subject"] == f"Draft {tag}", f"create_draft: {stored}")


async def approvals(s: ClientSession, tag: str) -> None:
    listed = await call(s, "list_pending_approvals", {})
    pending = rest_ok("GET", "/api/v1/approvals", ADMIN)["data"]
    check(ids(listed, "data") == {a["id"] for a in pending}, f"list_pending_approvals: {listed}")


async def ab_testing(s: ClientSession, tag: str) -> None:
    step = {"subject": f"Base {tag}", "html": "<p>Base</p>"}
    campaign = rest_ok("POST", "/api/v1/campaigns", ADMIN, {"name": f"AB {tag}", "site_id": SITE, "steps": [step]})
    variants = [{"subject": f"A {tag}"}, {"subject": f"B {tag}"}]
    test = await call(s, "create_ab_test", {"campaign_id": campaign["id"], "name": f"AB {tag}", "variants": variants})
    stored = rest_ok("GET", f"/api/v1/ab-tests/{test['id']}", ADMIN)
    check(stored["status"] == "running" and stored["variants"] == variants, f"create_ab_test: {stored}")


async def advisor(s: ClientSession, tag: str) -> None:
    suggestion = await call(s, "suggest_send_time", {"site_id": SITE})
    stored = rest_ok("GET", f"/api/v1/sites/{SITE}/send-time", ADMIN)
    check(suggestion == stored, f"suggest_send_time: {suggestion} against {stored}")
    check(suggestion["basis"] in ("contact", "site", "default"), f"suggest_send_time: {suggestion}")


async def compound(s: ClientSession, tag: str) -> None:
    arguments = {"name": f"Onboard {tag}", "domain": f"{tag}.onboard.example"}
    first = await call(s, "onboard_new_site", arguments)
    again = await call(s, "onboard_new_site", arguments)
    check(first["created"] and not again["created"], f"onboard_new_site: {first} then {again}")
    check(first["site"]["id"] == again["site"]["id"], "onboard_new_site made a second site")
    stored = rest_ok("GET", f"/api/v1/sites/{first['site']['id']}/warmup", ADMIN)
    check(stored["state"] == "warming", f"onboard_new_site started no warmup: {stored}")


ONE_TOOL_PER_GROUP = {
    "ab-testing": ab_testing,
    "advisor": advisor,
    "compound": compound,
    "drafts": drafts,
    "approvals": approvals,
    "automations": automations,
    "webhooks": webhooks,
    "gdpr": gdpr,
    "sites": sites,
    "contacts": contacts,
    "segments": segments,
    "templates": templates,
    "campaigns": campaigns,
    "analytics": analytics,
    "org": org,
    "data": data,
    "delivery-ops": delivery_ops,
    "warmup": warmup,
    "forms": forms,
    "social-posts": social_posts,
    "sms": sms,
    "content": content,
}

SITE = ""


def schema_problems(name: str, schema: dict[str, Any]) -> list[str]:
    """What keeps a client that compiles input schemas from loading the tool."""
    problems = []
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as invalid:
        problems.append(f"not a valid JSON Schema: {invalid.message}")
    if schema.get("type") != "object":
        problems.append("the top level is not type: object")
    if not isinstance(schema.get("properties"), dict):
        problems.append("the top level has no properties")
    if schema.get("additionalProperties") is not False:
        problems.append("the top level does not say additionalProperties: false")
    problems += [f"the top level has {key}" for key in ("allOf", "oneOf", "anyOf") if key in schema]
    resource = referencing.Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = referencing.Registry().with_resource("urn:tool", resource).resolver("urn:tool")
    for reference in refs_in(schema):
        try:
            resolver.lookup(reference)
        except referencing.exceptions.Unresolvable as unresolved:
            problems.append(f"$ref {reference} does not resolve: {unresolved!r}")
    return [f"{name}: {problem}" for problem in problems]


def refs_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [r for v in value.values() for r in refs_in(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs_in(v)]
    return []


def resolve_pointer(document: Any, reference: str) -> bool:
    if not reference.startswith("#/"):
        return False
    node = document
    for part in reference[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


async def schemas_are_client_ready(transport: str) -> None:
    async with TRANSPORTS[transport](ADMIN) as session:
        listed = (await session.list_tools()).tools
    problems = [p for tool in listed for p in schema_problems(tool.name, tool.input_schema)]
    check(listed and not problems, f"{transport}: {len(problems)} problem(s): {problems[:20]}")


def mirror_schemas_are_client_ready() -> None:
    """The REST mirror: its listing's schemas, and its OpenAPI document's references."""
    mirror = rest_ok("GET", "/api/mcp/tools", ADMIN)["tools"]
    problems = [p for tool in mirror for p in schema_problems(tool["name"], tool["input_schema"])]
    check(mirror and not problems, f"mirror listing: {len(problems)} problem(s): {problems[:20]}")
    document = rest_ok("GET", "/api/mcp/openapi.json", ADMIN)
    unresolved = sorted({r for r in refs_in(document) if not resolve_pointer(document, r)})
    check(not unresolved, f"mirror OpenAPI document: unresolved $refs {unresolved}")
    for path, item in document["paths"].items():
        body = item.get("post", {}).get("requestBody")
        if body:
            schema = body["content"]["application/json"]["schema"]
            check(schema.get("type") == "object" and schema.get("additionalProperties") is False,
                  f"mirror OpenAPI document: {path} takes an open or composed object")


async def misspelled_argument_is_refused(transport: str) -> None:
    async with TRANSPORTS[transport](ADMIN) as session:
        refusal = await refused(session, "add_subscriber", {"emial": "typo@example.com", "site_id": SITE})
    check(refusal.get("status") == 400, f"{transport}: not a 400: {refusal}")
    check("emial" in refusal.get("error", "") and "`email`" in refusal.get("error", ""),
          f"{transport}: the refusal does not name the argument and what it meant: {refusal}")
    check(
        not rest_ok("GET", "/api/v1/contacts?search=typo@example.com", ADMIN)["data"],
        "a refused tool call added a contact",
    )


async def unknown_tool_is_invalid_params(transport: str) -> None:
    async with TRANSPORTS[transport](ADMIN) as session:
        try:
            result = await session.call_tool("no_such_tool", {})
        except MCPError as error:
            check(error.error.code == -32602, f"{transport}: not -32602: {error.error!r}")
        else:
            raise Failure(f"{transport}: an unknown tool answered a result: {result}")


async def tools_and_groups(transport: str) -> None:
    connect = TRANSPORTS[transport]
    mirror = rest_ok("GET", "/api/mcp/tools", ADMIN)["tools"]
    groups = {tool["group"] for tool in mirror}
    missing = groups - set(ONE_TOOL_PER_GROUP)
    check(not missing, f"no SDK check for the groups {sorted(missing)}")
    async with connect(ADMIN) as session:
        listed = (await session.list_tools()).tools
        check(
            sorted(t.name for t in listed) == sorted(t["name"] for t in mirror),
            f"{transport}: tools/list is not the mirror's listing",
        )
        for tool in listed:
            check(tool.input_schema.get("type") == "object", f"{tool.name}: input schema is not an object")
        destructive = {t.name for t in listed if t.annotations and t.annotations.destructive_hint}
        check("revoke_api_key" in destructive, f"{transport}: revoke_api_key not marked destructive")
        tag = f"{transport.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
        for group in sorted(groups):
            await ONE_TOOL_PER_GROUP[group](session, tag)
            print(f"  {transport}: a {group} tool acts")


async def group_limited_key(transport: str) -> None:
    _, key = new_key("write", ["analytics", "org"])
    mirror = rest_ok("GET", "/api/mcp/tools", ADMIN)["tools"]
    allowed = {t["name"] for t in mirror if t["group"] in ("analytics", "org")}
    async with TRANSPORTS[transport](key) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        check(listed == allowed, f"{transport}: a key limited to analytics and org lists {sorted(listed - allowed)}")
        await call(session, "get_sites", {})
        refusal = await refused(session, "add_subscriber", {"email": "no@example.com", "site_id": SITE})
        check(refusal.get("status") == 403 and refusal.get("code") == "TOOL_GROUP_FORBIDDEN", f"{refusal}")
    check(
        not rest_ok("GET", "/api/v1/contacts?search=no@example.com", ADMIN)["data"],
        "a refused tool call added a contact",
    )


async def destructive_tool(transport: str) -> None:
    victim_id, victim = new_key("read")
    arguments = {"key_id": victim_id}
    async with TRANSPORTS[transport](ADMIN) as session:
        first = await call(session, "revoke_api_key", arguments)
        check(first.get("confirmation_required") is True, f"first call acted: {first}")
        token = first["confirmation_token"]
        check(rest("GET", "/api/v1/sites", victim)[0] == 200, "revoked by the first call")
        wrong = await refused(session, "revoke_api_key", {"key_id": str(uuid.uuid4()), "confirmation_token": token})
        check(wrong.get("code") == "INVALID_CONFIRMATION_TOKEN", f"a token for other arguments: {wrong}")
        check(rest("GET", "/api/v1/sites", victim)[0] == 200, "revoked by a token for other arguments")
        done = await call(session, "revoke_api_key", arguments | {"confirmation_token": token})
        check(done.get("revoked_at"), f"second call did not revoke: {done}")
        check(rest("GET", "/api/v1/sites", victim)[0] == 401, "the key still works")
        again = await refused(session, "revoke_api_key", arguments | {"confirmation_token": token})
        check(again.get("code") == "INVALID_CONFIRMATION_TOKEN", f"a token used twice: {again}")


async def initialize_reports_the_server(transport: str) -> None:
    async with TRANSPORTS[transport](ADMIN) as session:
        info = await session.initialize()  # the handshake's answer (made on connecting)
        check(info.capabilities.tools is not None, f"{transport}: no tools capability")
        check(info.server_info.name in ("mail-api", "mail-mcp"), f"{transport}: {info.server_info}")


async def stdio_names_the_wrong_project() -> None:
    """mail-mcp sends MAIL_PROJECT_ID; a key of another project is refused (404), not served."""
    server = StdioServerParameters(
        command=MAIL_MCP,
        env={"MAIL_API_KEY": ADMIN, "MAIL_API_URL": MAIL_URL, "MAIL_PROJECT_ID": str(uuid.uuid4())},
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            try:
                await session.list_tools()
            except Exception as refusal:  # noqa: BLE001 - the SDK raises the JSON-RPC error
                check("404" in str(refusal), f"not a 404: {refusal!r}")
            else:
                raise Failure("tools were listed for a project the key is not of")
            result = await session.call_tool("get_sites", {})
            check(result.is_error and result.structured_content["code"] == "PROJECT_NOT_FOUND", f"{result}")


async def main() -> int:
    global SITE
    SITE = rest_ok("POST", "/api/v1/sites", ADMIN, {"name": "SDK", "slug": "sdk", "from_name": "SDK"})["id"]
    failures = 0
    for transport in TRANSPORTS:
        for check_ in (
            initialize_reports_the_server,
            schemas_are_client_ready,
            tools_and_groups,
            misspelled_argument_is_refused,
            unknown_tool_is_invalid_params,
            group_limited_key,
            destructive_tool,
        ):
            try:
                await check_(transport)
                print(f"ok   {transport}: {check_.__name__}")
            except Exception as failure:  # noqa: BLE001 - report every check, then fail
                failures += 1
                while isinstance(failure, BaseExceptionGroup) and len(failure.exceptions) == 1:
                    failure = failure.exceptions[0]  # the SDK's task groups wrap what failed
                print(f"FAIL {transport}: {check_.__name__}: {failure!r}")
    try:
        mirror_schemas_are_client_ready()
        print("ok   REST mirror: mirror_schemas_are_client_ready")
    except Exception as failure:  # noqa: BLE001
        failures += 1
        print(f"FAIL REST mirror: mirror_schemas_are_client_ready: {failure!r}")
    try:
        await stdio_names_the_wrong_project()
        print("ok   stdio: stdio_names_the_wrong_project")
    except Exception as failure:  # noqa: BLE001
        failures += 1
        print(f"FAIL stdio: stdio_names_the_wrong_project: {failure!r}")
    print(f"MCP SDK test: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
