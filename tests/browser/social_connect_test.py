"""Connecting a social account on mail's dashboard, in headless Chromium, through an in-test
Mastodon authorization server (its documented OAuth wire format: /oauth/authorize,
/oauth/token with PKCE S256, /api/v1/accounts/verify_credentials): a person signs in, starts
the connection on the social page, authorizes on the platform's page and comes back to the
dashboard with the account connected. The callback's state is single use: the same callback
again, one with a forged state, and one from a browser not signed in as the person who started
the connection are refused with 400 SOCIAL_CONNECT_STATE_INVALID and store nothing. A screenshot of each page is saved.

Environment: MAIL_URL, MAIL_KEY (an admin key of the project), MAIL_SIGN_IN_EMAIL,
MAIL_SIGN_IN_PASSWORD (a sign-in of the same project), SOCIAL_AUTH_PORT (the port the stack's
MAIL_SOCIAL__MASTODON__BASE_URL names), SOCIAL_CLIENT_ID, SOCIAL_CLIENT_SECRET (its
MAIL_SOCIAL__MASTODON__CLIENT_ID and __CLIENT_SECRET), SCREENSHOT_DIR, CHROMIUM, CHROMEDRIVER.
"""

import base64
import hashlib
import html
import http.server
import json
import os
import secrets
import sys
import threading
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import browser_kit
from browser_kit import expect, shot, submit

BASE = os.environ["MAIL_URL"]
KEY = os.environ["MAIL_KEY"]
EMAIL = os.environ["MAIL_SIGN_IN_EMAIL"]
PASSWORD = os.environ["MAIL_SIGN_IN_PASSWORD"]
PORT = int(os.environ["SOCIAL_AUTH_PORT"])
CLIENT_ID = os.environ["SOCIAL_CLIENT_ID"]
CLIENT_SECRET = os.environ["SOCIAL_CLIENT_SECRET"]
HANDLE = "ada@social.example"


def call(method, path, body=None, token=None):
    return browser_kit.call(BASE, method, path, body=body, token=token)


class Mastodon(http.server.BaseHTTPRequestHandler):
    """The instance's OAuth endpoints: an authorization page whose button sends the person
    back with a code, the code's exchange (single use, PKCE checked) and the account."""

    codes = {}  # code -> (client_id, redirect_uri, code_challenge)
    tokens = set()
    redirects = []  # the callback addresses the person was sent back to
    problems = []  # what the service did wrong, checked at the end

    def answer(self, status, body, content_type="application/json"):
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):  # noqa: N802 (the standard library's name)
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/oauth/authorize":
            wanted = {"response_type": "code", "client_id": CLIENT_ID,
                      "code_challenge_method": "S256"}
            for name, value in wanted.items():
                if query.get(name) != value:
                    Mastodon.problems.append(f"authorize {name}: {query.get(name)}")
            hidden = "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                for k, v in query.items())
            self.answer(200, "<!doctype html><html lang=en><title>Authorize</title>"
                        "<h1>Authorize Browser mail to post for you?</h1>"
                        f'<form method="post" action="/oauth/authorize">{hidden}'
                        '<button type="submit" id="authorize">Authorize</button></form>',
                        "text/html; charset=utf-8")
        elif url.path == "/api/v1/accounts/verify_credentials":
            bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
            if bearer not in Mastodon.tokens:
                self.answer(401, {"error": "The access token is invalid"})
                return
            self.answer(200, {"id": "1", "username": "ada", "acct": HANDLE})
        else:
            self.answer(404, {"error": "Record not found"})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("content-length", "0"))
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        if self.path == "/oauth/authorize":
            code = secrets.token_urlsafe(16)
            Mastodon.codes[code] = (form.get("client_id"), form.get("redirect_uri"),
                                    form.get("code_challenge"))
            back = form["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": form.get("state", "")})
            Mastodon.redirects.append(back)
            self.send_response(302)
            self.send_header("location", back)
            self.send_header("content-length", "0")
            self.end_headers()
        elif self.path == "/oauth/token":
            issued = Mastodon.codes.pop(form.get("code"), None)
            if issued is None or form.get("grant_type") != "authorization_code":
                self.answer(400, {"error": "invalid_grant"})
                return
            client_id, redirect_uri, challenge = issued
            verifier = form.get("code_verifier", "")
            computed = base64.urlsafe_b64encode(
                hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if (form.get("client_id"), form.get("client_secret")) != (CLIENT_ID, CLIENT_SECRET):
                self.answer(401, {"error": "invalid_client"})
                return
            if form.get("redirect_uri") != redirect_uri or computed != challenge:
                Mastodon.problems.append("the token request's redirect_uri or PKCE verifier")
                self.answer(400, {"error": "invalid_grant"})
                return
            token = secrets.token_urlsafe(24)
            Mastodon.tokens.add(token)
            self.answer(200, {"access_token": token, "token_type": "Bearer",
                              "scope": "read:accounts write:statuses", "created_at": 1})
        else:
            self.answer(404, {"error": "Record not found"})

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Mastodon)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["CHROMIUM"]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1100,1000", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=os.environ["CHROMEDRIVER"]),
                              options=options)
    driver.implicitly_wait(10)
    try:
        # The social page asks the person to sign in first, then shows no account.
        driver.get(BASE + "/dashboard/social")
        driver.find_element(By.ID, "email").send_keys(EMAIL)
        driver.find_element(By.ID, "password").send_keys(PASSWORD)
        submit(driver, driver.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        expect(driver.find_element(By.TAG_NAME, "h1").text == "Social accounts",
               f"after the sign-in: {driver.current_url} {driver.find_element(By.TAG_NAME, 'h1').text}")
        expect(driver.find_elements(By.ID, "no-accounts"), "no account is connected yet")
        shot(driver, "social-01-before.png")

        # Connect: the platform's authorization page, then back to the dashboard.
        submit(driver, driver.find_element(By.ID, "connect-mastodon"))
        expect(driver.current_url.startswith(f"http://127.0.0.1:{PORT}/oauth/authorize?"),
               f"at the platform's authorization page: {driver.current_url}")
        shot(driver, "social-02-authorize.png")
        submit(driver, driver.find_element(By.ID, "authorize"))
        expect(driver.current_url == BASE + "/dashboard/social?connected=mastodon",
               f"back on the dashboard: {driver.current_url}")
        row = driver.find_element(By.ID, "account-mastodon")
        expect(HANDLE in row.text, f"the account's row: {row.text}")
        expect("Connected the mastodon account." in driver.find_element(By.ID, "connected").text,
               "the notice")
        shot(driver, "social-03-connected.png")
        expect(not Mastodon.problems, f"the platform saw: {Mastodon.problems}")
        expect(len(Mastodon.redirects) == 1, f"redirects: {Mastodon.redirects}")

        # The same callback again (its state is used up), and a forged state, in the browser.
        for name, address in (("replayed", Mastodon.redirects[0]),
                              ("forged", BASE + "/api/integrations/social/mastodon/callback?"
                               + urllib.parse.urlencode({"code": "x", "state": "forged"}))):
            driver.get(address)
            text = driver.find_element(By.TAG_NAME, "body").text
            expect("SOCIAL_CONNECT_STATE_INVALID" in text, f"the {name} callback: {text}")
            shot(driver, f"social-04-{name}-callback.png")
        status, body = browser_kit.call(BASE, "GET", Mastodon.redirects[0][len(BASE):])
        expect(status == 400 and body.get("code") == "SOCIAL_CONNECT_STATE_INVALID",
               f"the replayed callback: {status} {body}")

        # A connection started on the dashboard comes back only to the person who started it:
        # the same state from a browser with no sign-in is refused (and used up).
        driver.get(BASE + "/dashboard/social")
        submit(driver, driver.find_element(By.ID, "connect-mastodon"))
        started = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(driver.current_url).query))
        expect("state" in started, f"a second connect: {driver.current_url}")
        status, body = browser_kit.call(
            BASE, "GET", "/api/integrations/social/mastodon/callback?"
            + urllib.parse.urlencode({"code": "any", "state": started["state"]}))
        expect(status == 400 and body.get("code") == "SOCIAL_CONNECT_STATE_INVALID",
               f"another browser's callback: {status} {body}")

        status, accounts = call("GET", "/api/v1/social/accounts", token=KEY)
        expect(status == 200, f"accounts: {status} {accounts}")
        mastodon = [a for a in accounts if a["platform"] == "mastodon"]
        expect(len(mastodon) == 1 and mastodon[0]["handle"] == HANDLE,
               f"one mastodon account: {accounts}")
    finally:
        driver.quit()
        server.shutdown()
    print("browser test: a Mastodon account connected on the dashboard; replayed, forged and "
          "foreign callbacks refused")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as err:
        print(f"browser test failed: {err}", file=sys.stderr)
        sys.exit(1)
