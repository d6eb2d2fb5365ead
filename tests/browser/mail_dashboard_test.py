"""mail's dashboard in headless Chromium: an agent (an OAuth client through /mcp) asks to launch
a campaign and gets an approval id; nothing is sent; a person signs in, sees the approval with
its first email rendered and its audience, and approves it; the campaign's email goes out once;
a second approval changes nothing; the agent's token cannot approve. Every dashboard page
passes axe-core with no serious or critical violation. A screenshot of each page is saved.

Environment: MAIL_URL, MAIL_KEY (an admin key of the project), MAIL_SIGN_IN_EMAIL,
MAIL_SIGN_IN_PASSWORD (a sign-in of the same project), STACK_DIR (its outbox/ holds what the
send worker sent), AXE_JS (axe.min.js), SCREENSHOT_DIR, CHROMIUM, CHROMEDRIVER.
"""

import base64
import hashlib
import http.server
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import browser_kit
from browser_kit import Callback, expect, shot, submit

BASE = os.environ["MAIL_URL"]
KEY = os.environ["MAIL_KEY"]
EMAIL = os.environ["MAIL_SIGN_IN_EMAIL"]
PASSWORD = os.environ["MAIL_SIGN_IN_PASSWORD"]
OUTBOX = os.path.join(os.environ["STACK_DIR"], "outbox")
AXE = open(os.environ["AXE_JS"], encoding="utf-8").read()
CLIENT_NAME = "Browser test agent"
PAGES = ["/dashboard/approvals", "/dashboard/drafts", "/dashboard/keys",
         "/dashboard/domains", "/dashboard/social", "/dashboard/team"]


def call(method, path, body=None, token=None, form=None):
    return browser_kit.call(BASE, method, path, body=body, token=token, form=form)


def mcp(token, name, arguments):
    req = urllib.request.Request(
        BASE + "/mcp",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}}).encode(),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json",
                 "accept": "application/json, text/event-stream",
                 "mcp-protocol-version": "2025-06-18"},
        method="POST")
    with urllib.request.urlopen(req, timeout=20) as res:
        return json.loads(res.read())


def accessible(driver, page):
    """axe-core on the page in the browser: no serious or critical violation."""
    driver.execute_script(AXE)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations))"
        ".catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));")
    bad = [f"{v['id']} ({v['impact']}): {v['help']} at {[n.get('target') for n in v['nodes']]}"
           for v in result if v.get("impact") in ("serious", "critical")]
    expect(not bad, f"axe-core on {page}: {bad}")


def sent_with(subject):
    """The outbox's messages whose subject is `subject`."""
    found = []
    if not os.path.isdir(OUTBOX):
        return found
    for name in os.listdir(OUTBOX):
        with open(os.path.join(OUTBOX, name), "rb") as f:
            if f"Subject: {subject}".encode() in f.read():
                found.append(name)
    return found


def main():
    status, site = call("POST", "/api/v1/sites", token=KEY, body={
        "name": "Dashboard site", "slug": f"dash-{secrets.token_hex(3)}",
        "from_name": "Dashboard"})
    expect(status == 201, f"site: {status} {site}")
    address = f"reader-{secrets.token_hex(3)}@example.com"
    status, contact = call("POST", "/api/v1/contacts", token=KEY, body={
        "email": address, "site_id": site["id"], "first_name": "Ada"})
    expect(status == 201, f"contact: {status} {contact}")

    callback = http.server.HTTPServer(("127.0.0.1", 0), Callback)
    threading.Thread(target=callback.serve_forever, daemon=True).start()
    redirect = f"http://127.0.0.1:{callback.server_port}/callback"
    status, client = call("POST", "/oauth/register", body={
        "redirect_uris": [redirect], "client_name": CLIENT_NAME,
        "token_endpoint_auth_method": "none"})
    expect(status == 201, f"registration: {status} {client}")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(16)
    authorize = BASE + "/oauth/authorize?" + urllib.parse.urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
        "scope": "read write", "state": state, "code_challenge": challenge,
        "code_challenge_method": "S256", "resource": BASE + "/mcp"})

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["CHROMIUM"]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1100,1000", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=os.environ["CHROMEDRIVER"]),
                              options=options)
    driver.implicitly_wait(10)
    driver.set_script_timeout(30)
    try:
        # The agent is connected by the person (sign-in and consent), then acts alone.
        driver.get(authorize)
        driver.find_element(By.ID, "email").send_keys(EMAIL)
        driver.find_element(By.ID, "password").send_keys(PASSWORD)
        submit(driver, driver.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        driver.find_element(By.CSS_SELECTOR, "button[value=approve]").click()
        deadline = time.time() + 15
        while not Callback.received and time.time() < deadline:
            time.sleep(0.1)
        expect(Callback.received, "the redirect URI received nothing")
        back = urllib.parse.parse_qs(Callback.received[0])
        expect(back.get("state") == [state], f"state: {back}")
        status, token = call("POST", "/oauth/token", form={
            "grant_type": "authorization_code", "code": back["code"][0],
            "redirect_uri": redirect, "code_verifier": verifier,
            "client_id": client["client_id"]})
        expect(status == 200, f"token: {status} {token}")
        agent = token["access_token"]

        subject = f"Browser launch {secrets.token_hex(3)}"
        answer = mcp(agent, "launch_campaign", {
            "name": "Agent's launch", "site_id": site["id"],
            "emails": [{"subject": subject,
                        "html": "<p>Hi {{ first_name | default('there') }}</p>"
                                "<p><a href=\"{{ unsubscribe_url }}\">Unsubscribe</a></p>"}]})
        pending = answer["result"]["structuredContent"]
        expect(pending.get("approval_required") is True, f"launch: {answer}")
        approval = pending["approval_id"]
        expect(not sent_with(subject), "nothing is sent before the approval")

        # The person's dashboard: every page is accessible.
        for index, page in enumerate(PAGES, start=1):
            driver.get(BASE + page)
            expect(driver.find_element(By.TAG_NAME, "h1").text, f"{page} has a heading")
            accessible(driver, page)
            shot(driver, f"mail-{index:02d}-{page.rsplit('/', 1)[1]}.png")

        driver.get(BASE + "/dashboard/approvals")
        item = driver.find_element(By.ID, f"approval-{approval}")
        expect("Reaches 1 contact now." in item.text, f"audience: {item.text}")
        expect("an OAuth client" in item.text, f"requester: {item.text}")
        submit(driver, item.find_element(By.XPATH, ".//button[normalize-space()='Approve']"))
        expect(driver.find_elements(By.ID, "no-approvals"), "the approval left the list")
        shot(driver, "mail-07-approvals-after-approval.png")

        deadline = time.time() + 120
        while not sent_with(subject) and time.time() < deadline:
            time.sleep(0.2)
        expect(len(sent_with(subject)) == 1, f"sent once: {sent_with(subject)}")

        # A second approval of the same id changes nothing; the agent's token decides nothing.
        status, again = call("POST", f"/api/v1/approvals/{approval}/approve", token=KEY, body={})
        expect(status == 403, f"an admin key without the approve right: {status} {again}")
        status, again = call("POST", f"/api/v1/approvals/{approval}/approve", token=agent, body={})
        expect(status in (401, 403), f"the agent's token: {status} {again}")
        status, checked = call("GET", f"/api/v1/approvals/{approval}", token=KEY)
        expect(status == 200 and checked["status"] == "approved", f"approval: {status} {checked}")
        expect(len(sent_with(subject)) == 1, f"still sent once: {sent_with(subject)}")
    finally:
        driver.quit()
        callback.shutdown()
    print("browser test: the agent's launch waited, was approved on the dashboard, sent once")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as err:
        print(f"browser test failed: {err}", file=sys.stderr)
        sys.exit(1)
