"""What the browser tests share: a JSON/form HTTP call, the OAuth client's redirect URI, the
wait for a form's answer page, screenshots, and a failed check that says what it got."""

import http.server
import json
import os
import urllib.error
import urllib.parse
import urllib.request

from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.support.ui import WebDriverWait


def call(base, method, path, body=None, token=None, form=None):
    headers = {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["content-type"] = "application/json"
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["content-type"] = "application/x-www-form-urlencoded"
    if token:
        headers["authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as res:
            raw = res.read()
            return res.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        raw = err.read()
        try:
            return err.code, json.loads(raw)
        except ValueError:
            return err.code, raw.decode(errors="replace")


class Callback(http.server.BaseHTTPRequestHandler):
    """The connector's redirect URI: keeps the query it was sent."""

    received = []

    def do_GET(self):  # noqa: N802 (the standard library's name)
        Callback.received.append(urllib.parse.urlparse(self.path).query)
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>Connected</title><h1>Connected</h1>")

    def log_message(self, *args):
        pass


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def submit(driver, button):
    """Clicks a form's button and waits for the page it posts to, so that what is read next is
    not the old page going away."""
    button.click()
    WebDriverWait(driver, 15).until(left_the_page(button))


# What Chrome answers, instead of a stale-element error, when asked about an element that is
# being detached at that moment (the old page going away mid-call).
DETACHED = ("does not belong to the document", "No node with given id found")


def left_the_page(element):
    """A wait condition: `element` is no longer in the page (selenium's `staleness_of`, which
    also takes Chrome's detached-node errors as the answer)."""

    def check(_driver):
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as err:
            if any(text in str(err) for text in DETACHED):
                return True
            raise
        return False

    return check


def shot(driver, name):
    path = os.path.join(os.environ["SCREENSHOT_DIR"], name)
    expect(driver.save_screenshot(path), f"screenshot {path} not saved")
    print(f"browser test: {path}")
