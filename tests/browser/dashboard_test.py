"""memory's first-party pages in headless Chromium: a connector's authorization request is
signed in to and consented to in the browser, the code reaches the connector's redirect URI,
the connector's token submits a proposal, and the person sees the connector under connected
apps and approves the proposal on the proposals page. A screenshot of each page is saved.

Environment: MEMORY_URL, MEMORY_KEY (a first-party key of the same user), MEMORY_SIGN_IN_EMAIL,
MEMORY_SIGN_IN_PASSWORD, SCREENSHOT_DIR, CHROMIUM, CHROMEDRIVER.
"""

import base64
import hashlib
import http.server
import os
import secrets
import sys
import threading
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import browser_kit
from browser_kit import Callback, expect, shot, submit

BASE = os.environ["MEMORY_URL"]
KEY = os.environ["MEMORY_KEY"]
EMAIL = os.environ["MEMORY_SIGN_IN_EMAIL"]
PASSWORD = os.environ["MEMORY_SIGN_IN_PASSWORD"]
CLIENT_NAME = "Browser test connector"


def call(method, path, body=None, token=None, form=None):
    return browser_kit.call(BASE, method, path, body=body, token=token, form=form)


def main():
    callback = http.server.HTTPServer(("127.0.0.1", 0), Callback)
    threading.Thread(target=callback.serve_forever, daemon=True).start()
    redirect = f"http://127.0.0.1:{callback.server_port}/callback"

    status, client = call("POST", "/api/oauth/register", body={
        "redirect_uris": [redirect],
        "client_name": CLIENT_NAME,
        "token_endpoint_auth_method": "none",
    })
    expect(status == 201, f"registration: {status} {client}")
    client_id = client["client_id"]

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(16)
    authorize = BASE + "/oauth/authorize?" + urllib.parse.urlencode({
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect,
        "scope": "read propose",
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": BASE + "/api/v1",
    })

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["CHROMIUM"]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1000,900", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=os.environ["CHROMEDRIVER"]),
                              options=options)
    driver.implicitly_wait(10)
    try:
        # Sign-in.
        driver.get(authorize)
        expect("Sign in to memory" in driver.title, f"sign-in page: {driver.title}")
        expect(CLIENT_NAME in driver.page_source, "the sign-in page names the client")
        shot(driver, "01-sign-in.png")
        driver.find_element(By.ID, "email").send_keys(EMAIL)
        driver.find_element(By.ID, "password").send_keys(PASSWORD)
        submit(driver, driver.find_element(By.CSS_SELECTOR, "button[type=submit]"))

        # Consent: names the client, the scopes and the resource.
        expect(driver.find_element(By.ID, "scopes").text.split() == ["read", "propose"],
               f"consent scopes: {driver.find_element(By.ID, 'scopes').text!r}")
        expect(driver.find_element(By.ID, "resource").text == BASE + "/api/v1", "consent resource")
        expect(CLIENT_NAME in driver.find_element(By.TAG_NAME, "h1").text, "consent names the client")
        shot(driver, "02-consent.png")
        driver.find_element(By.CSS_SELECTOR, "button[value=approve]").click()

        deadline = time.time() + 15
        while not Callback.received and time.time() < deadline:
            time.sleep(0.1)
        expect(Callback.received, "the redirect URI received nothing")
        back = urllib.parse.parse_qs(Callback.received[0])
        expect(back.get("state") == [state], f"state: {back}")
        code = back["code"][0]

        status, token = call("POST", "/api/oauth/token", form={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect,
            "code_verifier": verifier,
            "client_id": client_id,
        })
        expect(status == 200, f"token: {status} {token}")
        access = token["access_token"]
        expect(access.startswith("memo_"), "a memo_ access token")
        expect(token["scope"] == "read propose", f"scope {token['scope']}")

        content = f"browser test proposal {secrets.token_hex(4)}"
        status, intake = call("POST", "/api/v1/connectors/intake", token=access,
                              body={"raw_content": content, "ai_vendor": "custom"})
        expect(status == 200 and intake["outcome"] == "proposed", f"intake: {status} {intake}")
        proposal = intake["proposal_id"]
        status, _ = call("POST", f"/api/v1/proposals/{proposal}/approve", token=access, body={})
        expect(status == 403, f"a connector token approving: {status}")

        # Connected apps (the session of the sign-in above).
        driver.get(BASE + "/dashboard/apps")
        expect(driver.find_element(By.TAG_NAME, "h1").text == "Connected apps", driver.title)
        expect(CLIENT_NAME in driver.page_source, "the connector is listed")
        shot(driver, "03-connected-apps.png")

        # Pending proposals: approve the connector's.
        driver.get(BASE + "/dashboard/proposals")
        item = driver.find_element(By.ID, f"proposal-{proposal}")
        expect(content in item.text, "the proposal's content is shown")
        shot(driver, "04-proposals.png")
        submit(driver, item.find_element(By.XPATH, ".//button[normalize-space()='Approve']"))
        expect(driver.find_element(By.TAG_NAME, "h1").text == "Pending proposals", driver.title)
        expect(not driver.find_elements(By.ID, f"proposal-{proposal}"), "the proposal left the list")
        shot(driver, "05-proposals-after-approval.png")
        status, decided = call("GET", f"/api/v1/proposals/{proposal}", token=KEY)
        expect(status == 200 and decided["status"] == "approved", f"proposal: {status} {decided}")

        # Revoking the app ends its token at once.
        driver.get(BASE + "/dashboard/apps")
        submit(driver, driver.find_element(By.XPATH, f"//button[contains(., '{CLIENT_NAME}')]"))
        expect(driver.find_elements(By.ID, "no-apps"), "no app left after revoking")
        status, _ = call("GET", "/api/v1/proposals", token=access)
        expect(status == 401, f"the revoked token: {status}")
    finally:
        driver.quit()
        callback.shutdown()
    print("browser test: signed in, consented, approved the proposal, revoked the app")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as err:
        print(f"browser test failed: {err}", file=sys.stderr)
        sys.exit(1)
