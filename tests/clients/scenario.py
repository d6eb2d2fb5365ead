"""Every route of both documents through the Python clients generated from them.

usage: scenario.py   (environment: MEMORY_URL, MEMORY_KEY, MAIL_URL, MAIL_KEY, MAIL_PROJECT_ID,
                      STACK_DIR (the send worker's outbox), WEBHOOK_SECRET; the generated
                      packages memory_client and mail_client on PYTHONPATH)

Each operation of a document needs a step here that calls it with valid data: an operation
without one fails the run, so a new route fails this test until it is covered.
"""

from __future__ import annotations

import base64
import datetime
import email
import hashlib
import hmac
import io
import json
import os
import pathlib
import re
import sys
import time
import uuid

import httpx

from strict import Failure, Service

ROOT = pathlib.Path(__file__).resolve().parents[2]


def service(name: str, package: str, url: str, key: str) -> Service:
    client_module = __import__(f"{package}.client", fromlist=["AuthenticatedClient"])
    client = client_module.AuthenticatedClient(
        base_url=url, token=key, raise_on_unexpected_status=False, timeout=httpx.Timeout(60.0)
    )
    document = json.loads((ROOT / f"proto-docs/{name}.openapi.json").read_text())
    return Service(name, package, document, client)


def memory(s: Service) -> None:
    s.call("healthz", 200)
    s.call("readyz", 200)
    s.call("health_details", 200)
    s.call("serve", 200)
    s.call("openapi_json", 200)
    s.call("openapi_yaml", 200)
    s.call("openapi_yaml_root", 200)
    oauth(s, "oauthApiResourceMetadata")

    product = s.call("createProduct", 201, body={"name": "atlas", "description": "The atlas", "status": "active"})
    s.call("listProducts", 200, limit=10)
    s.call("getProduct", 200, name="atlas")
    secret = s.call("rotateProductSigningSecret", 200, name="atlas")["signing_secret"]
    s.call("updateProductState", 200, name="atlas", body={"status": "beta", "summary": "first"})
    s.call("getProductState", 200, name="atlas")

    s.call("putIdentity", 200, body={"identity": {"name": "Ada"}, "products": ["atlas"], "constraints": ["short"]})
    s.call("getIdentity", 200)

    decision = s.call(
        "createDecision",
        201,
        body={"decision": "Use PostgreSQL", "product_name": "atlas", "reasoning": "It is there"},
    )
    s.call("createDecision", 201, body={"decision": "Use PostgreSQL everywhere", "product_name": "atlas"})
    s.call("searchDecisions", 200, q="PostgreSQL", limit=5)
    entry = s.call("createFreeForm", 201, body={"content": "Prefers short answers", "tags": ["style"]})
    s.call("listFreeForm", 200, limit=10)
    s.call("searchMemory", 200, q="PostgreSQL")
    signal = {"event_type": "deploy", "title": "v2 shipped", "severity": "error", "external_id": "evt-1"}
    first = s.call("ingestProjectSignal", 200, project_id=product["id"], body=signal)
    # The same signal signed with the product's secret, without a credential: a duplicate.
    again = s.call("ingestProjectSignal", 200, project_id=product["id"], body=signal,
                   **memory_signature(secret, signal), client=anonymous(s, "memory_client"))
    if not again["duplicate"] or again["signal_id"] != first["signal_id"]:
        raise Failure(f"memory-api ingestProjectSignal: a signed repeat is not the first signal: {again}")
    producer = {
        "source": "api", "signal_type": "latency_spike", "dedup_key": "p99", "severity": "warning",
        "title": "p99 above budget", "related_decisions": [decision["id"]],
        "payload": {"triggered_at": "2026-01-01T00:00:00Z", "metric_key": "p99_ms", "current_value": 480.5},
    }
    s.call("ingestProducerSignals", 201, body={"signals": [producer, producer]})
    s.call("listFeed", 200, limit=10)
    s.call("listMemoryConfidence", 200, limit=10)

    run = s.call("consolidateMemory", 200, body={"compute_budget_tokens": 1000})
    s.call("getConsolidationRun", 200, run_id=run["runId"])

    exported = s.call("exportMif", 200, scope="full")
    staged = s.call("importMif", 200, body={"mif": exported, "merge_strategy": "merge"})
    if staged.get("id") is None:
        raise Failure(f"memory-api importMif: a staged import has no id: {staged}")
    s.call("applyMifImport", 200, id=staged["id"])

    event = {"event_type": "signup", "idempotency_key": "scenario-signup-1", "payload": {"plan": "pro"}}
    first = s.call("ingestEvent", 201, body=event)
    repeat = s.call("ingestEvent", 200, body=event)
    if repeat["event_id"] != first["event_id"] or repeat["deduplicated"] is not True:
        raise Failure(f"memory-api ingestEvent: a repeated key gave {repeat}, first {first}")
    for cost in ("0.1", "0.2"):
        s.call(
            "ingestEvent",
            201,
            body={
                "event_type": "ai_cost",
                "payload": {"product": "atlas", "model": "small", "cost_usd": cost, "input_tokens": 10, "output_tokens": 2},
            },
        )
    costs = s.call("getAiCosts", 200, days=7)
    if costs["event_count"] != 2 or costs["total_tokens"]["input"] != 20:
        raise Failure(f"memory-api getAiCosts: {costs}")
    atlas = s.call("getProductAiCosts", 200, product="atlas", days=7)
    if atlas["by_model"][0]["model"] != "small":
        raise Failure(f"memory-api getProductAiCosts: {atlas}")
    rows = {"rows": [{"id": 1, "visits": 10}, {"id": 2, "visits": 12.5}], "idempotency_key": "scenario-1"}
    s.call("ingestDatasetRows", 201, name="atlas-metrics", body=rows)
    s.call("ingestDatasetRows", 200, name="atlas-metrics", body=rows)
    s.call("ingestDatasetRows", 201, name="atlas-metrics", body={"rows": [{"id": 2, "visits": 13}], "mode": "upsert"})
    # A multipart form: the generated model of the form, with the file as the client's File.
    models = __import__("memory_client.models", fromlist=["UploadForm"])
    types = __import__("memory_client.types", fromlist=["File"])
    form = models.UploadForm(
        file=types.File(payload=io.BytesIO(b"id,visits\n3,7\n4,\n"), file_name="atlas.csv", mime_type="text/csv"),
        dataset_name="atlas-metrics",
    )
    preview = s.call("uploadDataset", 201, body=form)
    if preview["row_count"] != 2 or preview["inferred_schema"]["visits"] != {"type": "number", "format": "integer"}:
        raise Failure(f"memory-api uploadDataset: an unexpected preview: {preview}")
    overrides = {"visits": {"type": "number"}}
    s.call("confirmUpload", 201, body={"upload_id": preview["upload_id"], "schema_overrides": overrides})
    s.call("listDatasets", 200, limit=10)
    dataset = s.call("getDataset", 200, name="atlas-metrics")
    if dataset["row_count"] != 4:
        raise Failure(f"memory-api getDataset: 4 rows expected: {dataset}")
    page = s.call("listDatasetRows", 200, name="atlas-metrics", limit=3)
    s.call("listDatasetRows", 200, name="atlas-metrics", limit=3, cursor=page["next_cursor"])

    workspaces(s)

    s.call("deleteDecision", 200, id=decision["id"])
    s.call("deleteFreeForm", 200, id=entry["id"])

    connectors(s)
    inbox_drafts(s)
    byok(s)


def connectors(s: Service) -> None:
    """A connector's command as a proposal (retried with its Idempotency-Key), approved once;
    another rejected; a lead queued without a proposal, listed, accepted once; another dismissed."""
    command = {"raw_content": "Remember: the user prefers tea", "ai_vendor": "claude",
               "requested_capability": "memory.write"}
    first = s.call("submitConnectorIntake", 200, body=command, idempotency_key="scenario-intake-1")
    retry = s.call("submitConnectorIntake", 200, body=command, idempotency_key="scenario-intake-1")
    if first["outcome"] != "proposed" or retry != first:
        raise Failure(f"memory-api submitConnectorIntake: a retry gave {retry}, first {first}")
    lead = s.call("submitConnectorIntake", 200, body={"raw_content": "Jane wants a demo", "requested_capability": "lead.capture"})
    if lead["outcome"] != "lead_queued" or "proposal_id" in lead:
        raise Failure(f"memory-api submitConnectorIntake: a lead gave {lead}")
    s.call("listProposals", 200, status="pending", limit=10)
    shown = s.call("getProposal", 200, id=first["proposal_id"])
    if shown["raw_content"] != command["raw_content"]:
        raise Failure(f"memory-api getProposal: {shown}")
    approved = s.call("approveProposal", 200, id=first["proposal_id"])
    if approved["status"] != "approved" or len(approved["memory_entry_ids"]) != 1:
        raise Failure(f"memory-api approveProposal: {approved}")
    s.call("approveProposal", 409, id=first["proposal_id"])
    other = s.call("submitConnectorIntake", 200, body={"raw_content": "Forget the tea"})
    s.call("rejectProposal", 200, id=other["proposal_id"])
    s.call("rejectProposal", 409, id=other["proposal_id"])
    leads = s.call("listLeads", 200, status="pending", limit=10)
    shown = [l for l in leads["data"] if l["id"] == lead["lead_id"]]
    if len(shown) != 1 or shown[0]["signal_id"] is None or shown[0]["raw_content"] != "Jane wants a demo":
        raise Failure(f"memory-api listLeads: {leads}")
    accepted = s.call("acceptLead", 200, id=lead["lead_id"])
    if accepted["status"] != "accepted":
        raise Failure(f"memory-api acceptLead: {accepted}")
    s.call("dismissLead", 409, id=lead["lead_id"])
    another = s.call("submitConnectorIntake", 200, body={"raw_content": "Bob wants pricing", "requested_capability": "lead"})
    s.call("dismissLead", 200, id=another["lead_id"])


def inbox_drafts(s: Service) -> None:
    """Drafts stored for a thread, then each of the lookup's three answers."""
    account = "owner@example.com"
    thread = {"thread_id": "18B83766F0BCBAC0", "latest_message_id": "ffee01",
              "latest_message_at": "2026-03-01T10:00:00Z", "generated_at": "2026-03-01T10:05:00Z",
              "why": "They asked about pricing", "drafts": [{"tone": "warm", "text": "Happy to help."}]}
    stored = s.call("replaceInboxDrafts", 200, body={"account": {"email": account}, "replace": True, "drafts": [thread]})
    if stored != {"upserted": 1, "deleted": 0}:
        raise Failure(f"memory-api replaceInboxDrafts: {stored}")
    at = datetime.datetime(2026, 3, 1, 10, tzinfo=datetime.timezone.utc)
    perm = "thread-f:1781234567890123456"
    states = [
        s.call("getInboxDrafts", 200, account_email=account, thread_perm_id=perm, latest_message_at=at),
        s.call("getInboxDrafts", 200, account_email=account, legacy_thread_id="18b83766f0bcbac0",
               latest_message_at=at + datetime.timedelta(minutes=1)),
        s.call("getInboxDrafts", 200, account_email=account, thread_perm_id=perm, message_id="ffee01"),
    ]
    if [a["state"] for a in states] != ["draft_available", "no_draft", "indeterminate"]:
        raise Failure(f"memory-api getInboxDrafts: {states}")


def byok(s: Service) -> None:
    """A credential stored (a hint shown, never the key), listed and deleted; the model runs
    need it."""
    s.call("createContentBrief", 422, body={"topic": "Spring seeds"})
    key = "sk-scenario-0123456789abcdef"
    stored = s.call("createByok", 201, body={"service": "openai", "label": "Mine", "key": key})
    listed = s.call("listByok", 200, limit=10)
    if stored["key_hint"] != "…cdef" or key in json.dumps(listed):
        raise Failure(f"memory-api createByok/listByok: {stored} {listed}")
    model_runs(s)
    producibles(s)
    videos(s)
    s.call("deleteByok", 200, id=stored["id"])


def model_runs(s: Service) -> None:
    """A content brief, an autonomous marketing run and a competitor watch, each polled until
    it finished: completed with the model's object, or (this stack's model endpoint does not
    answer) failed saying why, with nothing made up."""
    runs = [
        ("createContentBrief", {"topic": "Spring seeds", "format": "newsletter", "audience": "gardeners"},
         "getContentBriefStatus", "request_id"),
        ("runAutonomousMarketing", {"goal": "More signups", "channels": ["email"], "horizon_days": 14},
         "getAutonomousMarketingRun", "run_id"),
        ("runCompetitorWatch", {"competitors": [{"name": "Acme", "notes": "cheaper"}], "focus": "pricing"},
         "getCompetitorWatchRun", "run_id"),
    ]
    for start, body, status, param in runs:
        run = s.call(start, 202, body=body)
        for _ in range(100):
            run = s.call(status, 200, **{param: run["id"]})
            if run["status"] in ("completed", "failed"):
                break
            time.sleep(0.1)
        finished = (run["status"] == "completed" and isinstance(run["result"], dict)) or (
            run["status"] == "failed" and run["result"] is None and run["error"].startswith("LLM_"))
        if not finished:
            raise Failure(f"memory-api {status}: {run}")
    # A watched URL at the cloud metadata address is refused under any policy.
    s.call("runCompetitorWatch", 400, body={"competitors": [
        {"name": "Acme", "urls": ["http://169.254.169.254/latest/meta-data/"]}]})
    competitor_watches(s)


def competitor_watches(s: Service) -> None:
    """A stored competitor watch: created, listed, read, paused and rescheduled, deleted."""
    watch = s.call("createCompetitorWatch", 201, body={
        "name": "Acme weekly", "interval_minutes": 1440, "focus": "pricing",
        "competitors": [{"name": "Acme", "urls": ["https://acme.example/pricing"]}]})
    listed = s.call("listCompetitorWatches", 200, limit=100)
    if watch["id"] not in [w["id"] for w in listed["data"]]:
        raise Failure(f"memory-api listCompetitorWatches: {listed}")
    s.call("getCompetitorWatch", 200, id=watch["id"])
    changed = s.call("updateCompetitorWatch", 200, id=watch["id"],
                     body={"paused": True, "interval_minutes": 120})
    if not changed["paused"] or changed["interval_minutes"] != 120:
        raise Failure(f"memory-api updateCompetitorWatch: {changed}")
    s.call("deleteCompetitorWatch", 200, id=watch["id"])
    s.call("getCompetitorWatch", 404, id=watch["id"])


def producibles(s: Service) -> None:
    """A producible render job queued and polled (no render worker in this stack: it stays
    queued), and a download link the service did not sign, refused."""
    job = s.call("createProducibleJob", 202, body={"format": "csv", "ir": {"title": "T", "blocks": [
        {"type": "paragraph", "runs": [{"text": "hello"}]}]}})
    s.call("getProducibleJobStatus", 200, job_id=job["jobId"])
    s.call("downloadRenderedFile", 403, client=anonymous(s, "memory_client"),
           key=f"producibles/{job['jobId']}.csv", expires=1, signature="0" * 64)


def videos(s: Service) -> None:
    """Marketing video renders with no render worker in this stack: the waiting route gives up
    after its wait (MEMORY_RENDER_VIDEO__WAIT_SECS, 1 s here) and answers 202 with the job;
    a queued job is polled."""
    brief = {"brief": "Launch day for the new plan", "duration": 5}
    waited = s.call("renderVideo", 202, body=brief)
    queued = s.call("createVideoJob", 202, body=brief)
    for job in (waited, queued):
        polled = s.call("getVideoJobStatus", 200, job_id=job["jobId"])
        if polled["status"] != "queued":
            raise Failure(f"memory-api video job: {polled}")


def workspaces(s: Service) -> None:
    """Workspaces and scope, syncs, snapshots and drift, the agent bridge, the kernel export,
    the linked account and agents (memory-api)."""
    workspace = s.call("registerWorkspace", 201, body={"name": "atlas-repo", "location": "git@example.com:acme/atlas.git"})
    spare = s.call("registerWorkspace", 201, body={"name": "spare"})
    s.call("listWorkspaces", 200, limit=10)
    scope = s.call("setScope", 200, body={"workspace_id": workspace["id"]})
    if scope["active_workspace_id"] != workspace["id"]:
        raise Failure(f"memory-api setScope: the workspace is not active: {scope}")
    s.call("getScope", 200)
    synced = s.call("syncWorkspace", 200, id=workspace["id"], body={"budget_tokens": 2000})
    if "Ada" not in synced["file"]["content"] or synced["file"]["token_count"] > 2000:
        raise Failure(f"memory-api syncWorkspace: an unexpected file: {synced['file']}")
    edited = synced["file"]["content"] + "- A rule written by hand\n"
    snapshot = {"files": [{"path": "AGENTS.md", "content": edited}]}
    ingested = s.call("ingestWorkspaceSnapshot", 200, id=workspace["id"], body=snapshot)
    if len(ingested["drift"]) != 1:
        raise Failure(f"memory-api ingestWorkspaceSnapshot: one drift event expected: {ingested}")
    s.call("listWorkspaceDrift", 200, workspace_id=workspace["id"], status="open")
    resolved = s.call("resolveWorkspaceDrift", 200, id=ingested["drift"][0]["id"], body={"resolution": "accept", "note": "keep it"})
    if len(resolved["free_form_entry_ids"]) != 1:
        raise Failure(f"memory-api resolveWorkspaceDrift: the added line is not kept: {resolved}")
    s.call("listWorkspaceSyncLog", 200, workspace_id=workspace["id"], limit=10)
    s.call("deleteWorkspace", 200, id=spare["id"])

    s.call("exportKernel", 200)
    markdown = s.call("exportKernelMarkdown", 200, download=True)
    if b"## Identity" not in markdown:
        raise Failure(f"memory-api exportKernel: not the kernel's Markdown: {markdown[:200]!r}")
    job = s.call("generateAgentContext", (200, 202), body={"wait": True, "budget_tokens": 1000})
    for _ in range(100):
        job = s.call("getAgentContextJob", 200, job_id=job["job_id"])
        if job["status"] in ("completed", "failed"):
            break
        time.sleep(0.1)
    if job["status"] != "completed" or job["token_count"] > 1000:
        raise Failure(f"memory-api getAgentContextJob: {job}")
    s.call("getBridgeStatus", 200)
    s.call("getLinkedAccount", 200)
    agent = s.call("connectAgent", 201, body={"name": "scenario-agent", "kind": "codex"})
    s.call("disconnectAgent", 200, id=agent["agent"]["id"])
    s.call("setScope", 200, body={})


def anonymous(s: Service, package: str):
    """A client of the service without a credential."""
    client_module = __import__(f"{package}.client", fromlist=["Client"])
    return client_module.Client(
        base_url=s.client._base_url, raise_on_unexpected_status=False, timeout=httpx.Timeout(60.0)
    )


def memory_signature(secret: str, body: dict) -> dict[str, str]:
    """The X-Memory-Signature and X-Memory-Timestamp arguments for `body` as the generated client
    sends it."""
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    timestamp = str(int(time.time()))
    tag = hmac.new(secret.encode(), timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    return {"x_memory_signature": f"sha256={tag}", "x_memory_timestamp": timestamp}


def outbox_links(email_id: str) -> dict[str, str]:
    """The open and click tokens of the email the send worker wrote to its outbox, and an
    unsubscribe token for it (a transactional email carries no unsubscribe link, so it is
    signed here as the service signs it)."""
    path = pathlib.Path(os.environ["STACK_DIR"]) / "outbox" / f"{email_id}.eml"
    for _ in range(600):
        if path.exists():
            break
        time.sleep(0.1)
    else:
        raise Failure(f"the send worker wrote no {path} within 60 s")
    message = email.message_from_bytes(path.read_bytes())
    text = ""
    for part in message.walk():
        if not part.is_multipart():
            text += part.get_payload(decode=True).decode("utf-8", "replace")
    tokens = {}
    for kind in "oc":
        found = re.search(rf"/t/{kind}/([A-Za-z0-9_.-]+)", text)
        if found is None:
            raise Failure(f"no /t/{kind}/ link in the sent email {path}")
        tokens[kind] = found.group(1)
    payload = bytes([1]) + b"u" + uuid.UUID(email_id).bytes
    tag = hmac.new(os.environ["TRACKING_SECRET"].encode(), payload, hashlib.sha256).digest()
    tokens["u"] = f"{b64url(payload)}.{b64url(tag)}"
    return tokens


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def signed(client, secret: str, body: dict):
    """`client` with Standard Webhooks headers for `body` as the generated client sends it."""
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    key = base64.b64decode(secret.removeprefix("whsec_"))
    message_id = f"msg_{uuid.uuid4().hex}"
    timestamp = str(int(time.time()))
    tag = hmac.new(key, f"{message_id}.{timestamp}.".encode() + raw, hashlib.sha256).digest()
    return client.with_headers(
        {
            "webhook-id": message_id,
            "webhook-timestamp": timestamp,
            "webhook-signature": "v1," + base64.b64encode(tag).decode(),
        }
    )


def campaign_management(s: Service, site: str, campaign: str, contact: str) -> None:
    """The campaign engine's routes: the site's delivery policy, steps, statuses, enrollments,
    calendar, schedule, audience, clone, delete, launch and the model-backed writer."""
    s.call("getSendPolicy", 200, id=site)
    window = {"start": "08:00", "end": "20:00", "days": ["mon", "tue", "wed", "thu", "fri"]}
    s.call("putSendPolicy", 200, id=site, body={"timezone": "Europe/Berlin", "send_window": window, "blackout_dates": ["2030-12-25"]})
    s.call("updateWarmupSchedule", 200, id=site, body={"daily_limits": [100, 200], "provider_daily_cap": 500})
    s.call("pauseWarmup", 200, id=site)
    s.call("resumeWarmup", 200, id=site)
    s.call("getWarmupStatus", 200, id=site)
    step = s.call(
        "addCampaignStep",
        201,
        id=campaign,
        idempotency_key="step-1",
        body={"subject": "Welcome", "html": "<p>Hi</p>", "delay_minutes": 60},
    )
    s.call("listCampaignSteps", 200, id=campaign)
    s.call("getCampaignStep", 200, id=step["id"])
    s.call("updateCampaignStep", 200, id=step["id"], body={"subject": "Welcome!", "step_order": 1})
    s.call("updateCampaign", 200, id=campaign, body={"name": "Welcome series"})
    s.call("updateCampaignStatus", 200, id=campaign, body={"status": "active"})
    s.call("getCampaign", 200, id=campaign)
    s.call("enrollContact", 201, id=campaign, body={"contact_id": contact})
    s.call("getEnrollment", 200, id=campaign, contact_id=contact)
    s.call("listEnrollments", 200, id=campaign, limit=10)
    s.call("unenrollContact", 200, id=campaign, contact_id=contact)
    s.call("previewCampaignAudience", 200, id=campaign)
    now = time.gmtime()
    s.call("getCampaignCalendar", 200, year=now.tm_year, month=now.tm_mon)
    s.call("getSchedule", 200, id=site)
    copy = s.call("cloneCampaign", 201, id=campaign, idempotency_key="clone-1", body={"new_name": "Welcome copy"})
    s.call("deleteCampaignStep", 204, id=copy["steps"][0]["id"])
    s.call("deleteCampaign", 204, id=copy["id"])
    emails = [{"subject": "News", "html": "<p>News</p>", "text": "News"}]
    s.call("launchCampaign", 201, idempotency_key="launch-1", body={"name": "News", "site_id": site, "emails": emails})
    # No model is configured for this deployment: nothing is invented.
    s.call("generateEmail", 422, body={"site_id": site, "brief": "Spring seeds"})


def drafts_and_approvals(s: Service, site: str) -> None:
    """Drafts (written, approved or rejected, promoted to a campaign once) and approvals (the
    policy, an action held back, approved and rejected with a key holding the approve right)."""
    draft = s.call(
        "createDraft",
        201,
        idempotency_key="draft-1",
        body={"site_id": site, "subject": "Spring", "body_html": "<p>Spring</p>", "text": "Spring"},
    )["id"]
    s.call("listDrafts", 200, status="pending", limit=10)
    s.call("getDraft", 200, id=draft)
    s.call("approveDraft", 200, id=draft)
    promoted = s.call("promoteDraft", 200, id=draft, body={"name": "Spring", "delay_minutes": 0})
    other = s.call("createDraft", 201, body={"site_id": site, "subject": "Loud", "body_html": "<p>!</p>"})["id"]
    s.call("rejectDraft", 200, id=other, body={"reason": "Off-brand"})

    policy = s.call("getApprovalPolicy", 200)
    everyone = dict(policy, applies_to="everyone", expires_after_minutes=60)
    s.call("putApprovalPolicy", 200, body=everyone)
    approver = s.call("createApiKey", 201, body={"name": "approver", "scope": "write", "approve": True})
    approving = type(s.client)(
        base_url=os.environ["MAIL_URL"],
        token=approver["secret"],
        raise_on_unexpected_status=False,
        timeout=httpx.Timeout(60.0),
    )
    held = s.call("updateCampaignStatus", 202, id=promoted["campaign"]["id"], body={"status": "active"})
    s.call("listPendingApprovals", 200, limit=10)
    s.call("checkApproval", 200, id=held["approval_id"])
    s.call("approveApproval", 200, client=approving, id=held["approval_id"])
    emails = [{"subject": "Later", "html": "<p>Later</p>"}]
    launch = s.call("launchCampaign", 202, body={"name": "Later", "site_id": site, "emails": emails, "audience": "none"})
    s.call("rejectApproval", 200, client=approving, id=launch["approval_id"], body={"reason": "Not now"})
    s.call("putApprovalPolicy", 200, body=policy)


def ab_tests(s: Service, site: str) -> None:
    """An A/B test of a draft campaign's first step: created, listed, read, its statistics,
    and a winner promoted by hand, once."""
    campaign = s.call(
        "createCampaign",
        201,
        body={"name": "Subjects", "site_id": site, "steps": [{"subject": "Base", "html": "<p>Base</p>"}]},
    )["id"]
    variants = [{"subject": "Spring A"}, {"subject": "Spring B", "from_name": "The garden"}]
    test = s.call(
        "createAbTest",
        201,
        idempotency_key="ab-test-1",
        body={"campaign_id": campaign, "name": "Subjects", "variants": variants, "test_share": 0.2,
              "metric": "opens", "min_recipients": 50, "confidence": 0.95, "auto_promote": False},
    )["id"]
    s.call("listAbTests", 200, campaign_id=campaign, limit=10)
    s.call("getAbTest", 200, id=test)
    s.call("checkAbSignificance", 200, id=test)
    s.call("promoteAbWinner", 200, id=test, body={"variant": 1})
    s.call("promoteAbWinner", 409, id=test, body={})


def oauth(s: Service, resource_metadata: str) -> None:
    """The OAuth endpoints (the browser part, HTML, is not in the documents: mail's
    tests/mcp/oauth_test.py and memory's tests/browser/dashboard_test.py drive it)."""
    s.call("oauthServerMetadata", 200)
    s.call("oauthResourceMetadata", 200)
    s.call(resource_metadata, 200)
    client = s.call(
        "registerOauthClient",
        201,
        body={"redirect_uris": ["http://127.0.0.1:33418/callback"], "client_name": "scenario",
              "token_endpoint_auth_method": "none"},
    )["client_id"]
    refused = s.call(
        "oauthToken",
        400,
        body={"grant_type": "authorization_code", "code": "not-issued", "client_id": client,
              "redirect_uri": "http://127.0.0.1:33418/callback", "code_verifier": "v" * 43},
    )
    if refused["error"] != "invalid_grant":
        raise Failure(f"oauthToken: {refused}")
    s.call("revokeOauthToken", 200, body={"token": "not-issued", "client_id": client})


def mail(s: Service) -> None:
    s.call("healthz", 200)
    s.call("readyz", 200)
    s.call("health_details", 200)
    s.call("serve", 200)
    s.call("openapi_json", 200)
    oauth(s, "oauthMcpResourceMetadata")

    site = s.call("createSite", 201, body={"name": "Shop", "slug": "shop", "from_name": "Shop"})["id"]
    s.call("listSites", 200, limit=10)
    s.call("getSite", 200, id=site)
    s.call("updateSite", 200, id=site, body={"from_name": "The Shop"})
    s.call("putBrandVoice", 200, id=site, body={"tone": "warm", "words_to_avoid": ["cheap"]})
    s.call("getBrandVoice", 200, id=site)
    domain = s.call("registerDomain", 201, body={"site_id": site, "domain": "mail.shop.example"})["id"]
    s.call("registerDomain", 200, body={"site_id": site, "domain": "Mail.Shop.Example"})
    s.call("listDomains", 200, limit=10)
    s.call("getDomain", 200, id=domain)
    # Nothing is published for the domain: checked, still pending.
    if s.call("refreshDomainDns", 200, id=domain)["status"] != "pending":
        raise Failure("mail-api refreshDomainDns: an unpublished domain is not pending")
    s.call(
        "identify",
        201,
        body={"email": "ada@example.com", "first_name": "Ada", "site_id": site, "tags": ["vip"]},
    )
    bob = s.call("createContact", 201, idempotency_key="contact-1", body={"email": "bob@example.com", "utm_source": "news"})["contact_id"]
    s.call("listContacts", 200, limit=10)
    ada = s.call("getContact", 200, id="ada@example.com")["contact_id"]
    s.call(
        "updateContact",
        200,
        id=ada,
        body={"last_name": "Lovelace", "properties": {"plan": {"tier": "pro"}}, "tags": ["beta"]},
    )
    s.call("setContactTags", 200, body={"contact_ids": [ada], "add": ["news"], "remove": ["beta"]})
    imported = s.call(
        "importContacts",
        200,
        body={"site_id": site, "contacts": [{"email": "ada+list@example.com", "first_name": "Ada"}, {"email": "nope"}]},
    )
    s.call("findDuplicateContacts", 200, limit=10)
    s.call("mergeContacts", 200, body={"target_id": ada, "source_ids": [imported["rows"][0]["contact_id"]]})
    s.call("getContactSchema", 200, site_id=site)
    s.call("listInactiveContacts", 200, days=30)
    s.call("getHygieneConfig", 200)
    s.call("updateHygieneConfig", 200, body={"inactive_days": 365, "suppress_role_addresses": True})
    s.call("runListHygiene", 200, body={"site_id": site, "dry_run": True})
    s.call("listHygieneAudit", 200, site_id=site)
    s.call("unsubscribeContact", 200, body={"email": "bob@example.com"})
    campaign = s.call(
        "createCampaign",
        201,
        idempotency_key="campaign-1",
        body={"name": "Welcome", "site_id": site, "type": "triggered", "trigger_event_name": "signup"},
    )["id"]
    s.call("listCampaigns", 200, site_id=site)
    s.call("trackEvent", 200, body={"email": "ada@example.com", "event": "signup", "data": {"plan": "pro"}})
    campaign_management(s, site, campaign, bob)
    drafts_and_approvals(s, site)
    ab_tests(s, site)
    template = s.call("createTemplate", 201, idempotency_key="template-1", body={"name": "Welcome", "brief": "Say hello"})["id"]
    s.call("listTemplates", 200)
    s.call("getTemplate", 200, id=template)
    s.call("updateTemplate", 200, id=template, body={"subject_hint": "Hello", "tags": ["onboarding"]})
    # No model in the stack: the translation is refused, nothing is made.
    s.call("translateTemplate", 422, id=template, idempotency_key="translate-1", body={"language": "de"})
    s.call("deleteTemplate", 204, id=template)
    vip = {
        "all": [
            {"field": "tag", "op": "eq", "value": "vip"},
            {"any": [
                {"field": "opened_within_days", "op": "exists", "value": True},
                {"field": "properties.plan.tier", "op": "eq", "value": "pro"},
            ]},
        ]
    }
    segment = s.call("createSegment", 201, idempotency_key="segment-1", body={"name": "VIPs", "rules": vip})["id"]
    s.call("listSegments", 200, limit=10)
    s.call("getSegment", 200, id=segment)
    s.call("updateSegment", 200, id=segment, body={"description": "Our best", "rules": vip})
    s.call("listSegmentContacts", 200, id=segment, limit=10)
    s.call("previewSegment", 200, body={"segment_id": segment, "sample_size": 5})
    s.call("previewSegment", 200, body={"rules": vip})
    s.call("estimateSegmentSize", 200, body={"rules": vip, "site_id": site})
    s.call("winBackDraft", 200, site_id=site, inactive_days=30)
    enrolled = s.call("enrollSegment", 200, id=campaign, body={"site_id": site, "segment_id": segment})
    if enrolled["segment_id"] != segment:
        raise Failure(f"mail-api enrollSegment: {enrolled}")
    # The stack has no language model: the ruled 422, and nothing saved.
    s.call("createSegmentFromDescription", 422, body={"name": "Buyers", "description": "People who bought"})
    s.call("deleteSegment", 204, id=segment)
    s.call("addSuppression", 201, body={"email": "gone@example.com", "note": "asked"})
    s.call("listSuppressions", 200)
    s.call("removeSuppression", 204, email="gone@example.com")

    # 200 once the provider answered, 202 `queued` when the worker took longer than the
    # API waits (a loaded machine): both are documented, and the email goes out either way.
    sent = s.call(
        "send",
        (200, 202),
        body={
            "to": "ada@example.com",
            "site_id": site,
            "subject": "Hello",
            "html": '<p>Hi <a href="https://example.com/start">start</a></p>',
            "text": "Hi",
        },
    )
    email_id = sent["id"]
    tokens = outbox_links(email_id)
    s.call("trackOpen", 200, token=tokens["o"])
    s.call("trackClick", 302, token=tokens["c"])
    s.call("recordConversion", 200, body={"email": "ada@example.com", "revenue": 12.5, "currency": "EUR", "order_id": "o-1"})
    s.call("listEmails", 200, limit=10)
    s.call("getEmail", 200, id=email_id)
    s.call("listEmailEvents", 200, id=email_id)
    preview = {"site_id": site, "subject": "Hello", "html": '<p>Hi <a href="https://example.com/">go</a></p>'}
    s.call("previewEmail", 200, body=preview)
    s.call("validateTemplate", 200, body={"html": "<p>Hi {{name}}</p>", "kind": "transactional"})
    s.call("listEvents", 200, limit=10, event="signup")
    s.call("getContactTimeline", 200, id=ada, limit=10)
    s.call("exportContact", 200, id=ada)

    s.call("analyticsOverview", 200, site_id=site)
    s.call("analyticsCampaigns", 200)
    s.call("analyticsConversion", 200, campaign_id=campaign)
    s.call("getSiteInsights", 200, id=site, days=30)
    s.call("getAbuseMonitorStatus", 200, id=site)
    s.call("overrideAbuseMonitor", 200, id=site, body={"reason": "list cleaned", "ttl_hours": 24})
    s.call("dnsblCheck", 200, id=site)
    s.call("dnsblDelistingDraft", 200, id=site, zone="dbl.example.invalid")
    s.call("suggestSendTime", 200, id=site, days=30)
    s.call("campaignAdvisor", 200, campaign_id=campaign)
    s.call("runPortfolioAnalysis", 200, days=30)
    s.call("recoveryPlan", 200, id=site)
    s.call("diagnoseDeliveryIssue", 200, site_id=site)
    # No model is configured for this deployment: nothing is invented.
    s.call("optimizeSubjectLines", 422, body={"campaign_id": campaign, "site_id": site})
    s.call("suggestContentTopics", 422, body={"site_id": site})
    s.call("createTemplateFromBrief", 422, body={"site_id": site, "name": "Spring", "brief": "Spring seeds"})
    s.call("setupCampaignFromBrief", 422, body={"site_id": site, "campaign_name": "Spring", "brief": "Spring seeds"})
    onboarding = {"name": "Garden", "domain": "news.garden.example"}
    s.call("onboardNewSite", 201, body=onboarding)
    s.call("onboardNewSite", 200, body=onboarding)
    s.call("getDomainHealth", 200, id=site)
    s.call("deliverabilityCheck", 200, id=site)
    s.call("getScoringRules", 200)
    s.call("updateScoringRules", 200, body={"open_points": 2, "half_life_days": 14})
    s.call("explainContactScore", 200, id=ada)
    form = s.call("createForm", 201, body={"site_id": site, "name": "Newsletter", "tags": ["news"],
                                           "fields": [{"name": "first_name", "label": "First name"}]})
    s.call("listForms", 200, site_id=site, limit=10)
    s.call("getForm", 200, id=form["id"])
    s.call("signupFormPage", 200, id=form["id"])
    # Without the page's signed render time (as the embedded snippet posts): the page again.
    s.call("submitSignupForm", 200, id=form["id"])
    s.call("confirmSignup", 404, token="not-a-signed-token")
    s.call("getFormStats", 200, id=form["id"])
    s.call("deleteForm", 204, id=form["id"])
    # Social publishing: no platform is configured in the stack, so nothing leaves it.
    post = s.call("createSocialPost", 201, body={"title": "Launch", "content": "We launched.", "platforms": ["mastodon", "x"]})
    s.call("listSocialPosts", 200, limit=10)
    s.call("getSocialPost", 200, id=post["id"])
    s.call("updateSocialPost", 200, id=post["id"], body={"content": "We launched today."})
    s.call("adaptSocialPost", 200, body={"email_campaign_id": campaign, "platforms": ["x", "bluesky"]})
    social_campaign = s.call("createSocialCampaign", 201, body={"name": "Spring", "platform": "x", "destination_url": "https://example.com/spring"})
    s.call("listSocialCampaigns", 200, limit=10)
    s.call("scheduleSocialPost", 422, id=social_campaign["id"], body={"content": "Spring is here", "publisher": "Ana"})
    s.call("listSocialAccounts", 200)
    s.call("connectSocialAccount", 422, platform="mastodon", body={})
    s.call("connectSocialPlatform", 422, platform="mastodon")
    s.call("socialConnectCallback", 400, platform="mastodon", code="c", state="not-a-state")
    s.call("deleteSocialPost", 204, id=post["id"])
    s.call("getSmsProviderStatus", 200)
    s.call("setContactSmsConsent", 200, id=ada,
           body={"status": "granted", "phone": "+1 415 867 5310", "timezone": "Europe/London"})
    s.call("previewSmsCost", 200, body={"body": "Sale: 5€ off 😀", "country": "US"})
    # Without a provider, a text is refused (422), nothing is written.
    s.call("sendSms", 422, body={"contact_id": ada, "body": "Hello"})
    s.call("setSmsProvider", 200, body={"provider": "twilio", "account_sid": "AC" + "0" * 32,
                                        "auth_token": "a" * 32, "from_number": "+14158675309"})
    s.call("sendSms", 201, body={"contact_id": ada, "body": "Hello", "idempotency_key": "sms-1"})
    s.call("sendSmsCampaign", 201, body={"site_id": site, "name": "Sale", "body": "Sale today"})
    s.call("listSmsLog", 200, limit=10)
    s.call("listSmsInbound", 200, limit=10)
    # Twilio's callbacks: signed with the project's auth token; a wrong signature is refused.
    s.call("receiveTwilioInbound", 401, project_id=os.environ["MAIL_PROJECT_ID"],
           x_twilio_signature="invalid", body={"MessageSid": "SM1", "From": "+14158675310", "Body": "STOP"})
    s.call("receiveTwilioStatus", 401, project_id=os.environ["MAIL_PROJECT_ID"],
           x_twilio_signature="invalid", body={"MessageSid": "SM1", "MessageStatus": "delivered"})
    block = s.call("createContentBlock", 201, body={"name": "scenario_footer", "html": "<p>Bye</p>"})
    s.call("listContentBlocks", 200, limit=10)
    s.call("getContentBlock", 200, id=block["id"])
    s.call("updateContentBlock", 200, id=block["id"], body={"html": "<p>Bye now</p>"})
    # A public name that does not resolve: stored; the pipeline reports its read failed.
    source = s.call("createContentSource", 201, body={"site_id": site, "url": "https://feeds.invalid/scenario.xml"})
    s.call("listContentSources", 200, site_id=site, limit=10)
    s.call("triggerContentPipeline", 200, body={"source_id": source["id"]})
    s.call("deleteContentSource", 204, id=source["id"])
    s.call("deleteContentBlock", 200, id=block["id"])
    flow = s.call("createAutomation", 201, body={
        "site_id": site, "name": "Welcome flow", "trigger": {"type": "event", "event": "signed_up"},
        "steps": [{"type": "send_email", "subject": "Welcome", "html": "<p>Hi</p>"},
                  {"type": "wait", "minutes": 60},
                  {"type": "branch", "condition": {"type": "opened_previous"}, "else_skip": 1},
                  {"type": "add_tag", "tag": "engaged"}]})
    s.call("listAutomations", 200, site_id=site, limit=10)
    s.call("getAutomation", 200, id=flow["id"])
    s.call("updateAutomation", 200, id=flow["id"], body={"name": "Welcome flow 2"})
    s.call("activateAutomation", 200, id=flow["id"])
    s.call("enrollAutomation", 201, id=flow["id"], body={"subscriber_id": ada})
    s.call("triggerAutomation", 200, id=flow["id"])
    s.call("previewAutomation", 200, id=flow["id"])
    s.call("pauseAutomation", 200, id=flow["id"])
    s.call("deleteAutomation", 204, id=flow["id"])
    s.call("analyticsPerformance", 200, days=30)
    s.call("analyticsPortfolio", 200, rank_by="sent")
    s.call("analyticsTotals", 200)
    s.call("analyticsEngagement", 200, site_id=site)
    s.call("listSendDeadLetters", 200, state="failed")
    s.call("listCronRuns", 200, job="housekeeping")
    s.call("exportData", 200, format_="json")
    s.call("exportFull", 200, site_id=site)
    s.call("exportData", 200, format_="json", resource="contacts")

    s.call("setProvider", 200, body={"kind": "resend", "api_key": "re_123456789"})
    # Resend's key is checked at the first send; the answer says so (200).
    s.call("testProvider", 200)
    s.call("clearProvider", 204)
    if s.call("getLanguageModel", 200)["source"] != "none":
        raise Failure("mail-api getLanguageModel: a model is configured in the stack")
    s.call("setLanguageModel", 200, body={"base_url": "https://llm.invalid/v1", "model": "m", "api_key": "sk-1"})
    s.call("clearLanguageModel", 200)
    secret = s.call("rotateWebhookSecret", 201)["secret"]
    event = {"type": "email.delivered", "data": {"email_id": "unknown-message"}}
    s.call(
        "receiveProjectProviderWebhook",
        200,
        client=signed(s.client, secret, event),
        provider="resend",
        project_id=os.environ["MAIL_PROJECT_ID"],
        body=event,
    )
    s.call(
        "receiveProviderWebhook",
        200,
        client=signed(s.client, os.environ["WEBHOOK_SECRET"], event),
        provider="resend",
        body=event,
    )
    s.call("getProject", 200)
    s.call("getPlan", 200)
    key = s.call("createApiKey", 201, body={"name": "agent", "scope": "read", "tool_groups": ["contacts"]})
    s.call("listApiKeys", 200)
    s.call("revokeApiKey", 200, id=key["id"])
    # No platform answers in the stack: a Mailchimp key without its data center is refused
    # before any call, naming the platform.
    s.call("connectPlatform", 422, body={"platform": "mailchimp", "credentials": {"api_key": "no-data-center"}})
    if s.call("listPlatformConnections", 200, limit=10)["data"]:
        raise Failure("mail-api listPlatformConnections: a refused connection was stored")
    s.call("disconnectPlatform", 404, id=str(uuid.uuid4()))
    # No connection and no platform in the stack: the migration routes answer their 404s (an
    # OAuth token is checked with the platform only once its site is the project's).
    s.call("startPlatformMigration", 404, id=str(uuid.uuid4()), body={"site_id": site})
    s.call("migrateCampaignsFrom", 404, body={"provider": "mailchimp", "oauth_token": "probe", "site_id": str(uuid.uuid4())})
    # A generic CSV export through a column mapping: queued at once, then read back.
    csv_run = s.call("importPlatformCsv", 202, body={
        "site_id": site, "layout": "generic",
        "csv": "Email,Name,City\nada@example.com,Ada,Paris\n",
        "mapping": {"email": "Email", "first_name": "Name", "properties": {"city": "City"}}})
    s.call("listImportHistory", 200, limit=10)
    s.call("getPlatformImport", 200, id=csv_run["id"])
    s.call("getPlatformImport", 404, id=str(uuid.uuid4()))
    commerce(s, site)
    s.call("inviteTeamMember", 201, body={"email": "grace@example.com", "role": "viewer"})
    s.call("listTeamMembers", 200)
    s.call("listNotifications", 200, unread=True)
    s.call("markNotificationsRead", 200, body={})
    s.call("erasePersonalData", 200, id=bob)
    s.call("listDeletionLog", 200)
    hook = s.call(
        "subscribeWebhook",
        201,
        body={"url": "https://hooks.example.com/in", "events": ["contact.unsubscribed", "email.bounced"]},
    )
    if not hook["secret"].startswith("whsec_"):
        raise Failure(f"subscribeWebhook: no whsec_ secret in {hook}")
    s.call("subscribeWebhook", 400, body={"url": "http://169.254.169.254/", "events": ["email.bounced"]})
    s.call("unsubscribePage", 200, token=tokens["u"])
    # The body is any form, or none (the page's button posts nothing); it is not read.
    s.call("unsubscribe", 200, token=tokens["u"])
    webhooks(s, hook["id"])


def commerce(s: Service, site: str) -> None:
    """Commerce platforms: a Stripe source, its triggers and its (unsigned, refused) webhooks."""
    source = s.call("addCommerceSource", 201, body={"platform": "stripe", "signing_secret": "whsec_scenario", "site_id": site})
    s.call("listCommerceSources", 200, limit=10)
    trigger = s.call("configurePlatformTrigger", 201, body={"platform": "stripe", "event_type": "checkout.session.completed", "action": "tag", "tag": "buyer"})
    s.call("configurePlatformTrigger", 400, body={"platform": "stripe", "event_type": "x", "action": "enroll"})
    s.call("listPlatformTriggers", 200, platform="stripe")
    s.call("listPlatformEvents", 200, limit=10)
    # No platform signs in the scenario: a wrong signature is 401, an unknown source 404.
    event = {"id": "evt_scenario", "type": "checkout.session.completed", "data": {"object": {}}}
    s.call("receiveStripeWebhook", 401, source_id=source["id"], stripe_signature="t=1,v1=00", body=event)
    s.call("receiveShopifyWebhook", 404, source_id=str(uuid.uuid4()), x_shopify_hmac_sha_256="AA==",
           x_shopify_topic="orders/create", x_shopify_webhook_id="w1", body={"id": 1})
    s.call("deletePlatformTrigger", 204, id=trigger["id"])
    s.call("deleteCommerceSource", 204, id=source["id"])


def webhooks(s: Service, hook: str) -> None:
    """The outbound webhooks: the unsubscribe above made a delivery to the subscription."""
    s.call("listWebhookSubscriptions", 200, limit=10)
    s.call("getWebhookSubscription", 200, id=hook)
    rotated = s.call("updateWebhookSubscription", 200, id=hook, body={"rotate_secret": True, "description": "CRM"})
    if not rotated["secret"].startswith("whsec_"):
        raise Failure(f"updateWebhookSubscription: no rotated secret in {rotated}")
    deliveries = s.call("listWebhookDeliveries", 200, subscription_id=hook, limit=10)["data"]
    if not deliveries:
        raise Failure("listWebhookDeliveries: the unsubscribe made no delivery")
    s.call("listWebhookDeliveries", 200, status="dead", limit=10)
    # Pending still (its endpoint does not exist, retries go on): 409; once dead: replayed.
    s.call("replayWebhookDelivery", (200, 409), id=deliveries[0]["id"])
    s.call("deleteWebhookSubscription", 204, id=hook)
    s.call("putChatAlerts", 200, body={"url": "https://chat.example.com/services/T0/B0/token"})
    s.call("putChatAlerts", 400, body={"url": "http://127.0.0.1/hook"})
    s.call("getChatAlerts", 200)
    s.call("deleteChatAlerts", 204)


def main() -> int:
    services = [
        (service("memory-api", "memory_client", os.environ["MEMORY_URL"], os.environ["MEMORY_KEY"]), memory),
        (service("mail-api", "mail_client", os.environ["MAIL_URL"], os.environ["MAIL_KEY"]), mail),
    ]
    failed = 0
    for s, scenario in services:
        try:
            scenario(s)
        except Failure as e:
            print(f"FAIL {e}")
            failed += 1
        missing = sorted(set(s.operations()) - s.called)
        for operation_id in missing:
            method, path, _ = s.operations()[operation_id]
            print(f"FAIL {s.name}: no scenario step calls {operation_id} ({method.upper()} {path})")
        failed += len(missing)
        print(f"{s.name}: {len(s.called)} of {len(s.operations())} operations called and parsed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
