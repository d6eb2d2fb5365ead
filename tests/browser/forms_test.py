"""A signup form in headless Chromium: a person opens the hosted page, fills it and sends it;
the confirmation email is sent (read from the send worker's outbox); its link subscribes the
contact with the form's tags and fires form.submitted, once (a second visit changes nothing).
A bot filling the hidden honeypot, and one sending the form at once after the page loads, are
refused, and the form's stats count both. A screenshot of each page is saved.

Environment: MAIL_URL, MAIL_KEY (an admin key of the project), STACK_DIR (its outbox/ holds
what the send worker sent), SCREENSHOT_DIR, CHROMIUM, CHROMEDRIVER.
"""

import email
import os
import re
import secrets
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import browser_kit
from browser_kit import expect, left_the_page, shot, submit

BASE = os.environ["MAIL_URL"]
KEY = os.environ["MAIL_KEY"]
OUTBOX = os.path.join(os.environ["STACK_DIR"], "outbox")
# The page refuses a form sent sooner than a second after it was rendered; a person takes longer.
PERSON_DELAY = 1.5


def call(method, path, body=None):
    return browser_kit.call(BASE, method, path, body=body, token=KEY)


def confirmation_link(address):
    """The confirmation link of the email the send worker wrote for `address` (waits up to 30 s)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        for name in os.listdir(OUTBOX) if os.path.isdir(OUTBOX) else []:
            with open(os.path.join(OUTBOX, name), "rb") as f:
                message = email.message_from_binary_file(f)
            if address not in str(message.get("To", "")):
                continue
            text = "".join(part.get_payload(decode=True).decode("utf-8", "replace")
                           for part in message.walk() if not part.is_multipart())
            found = re.search(r"https?://[^\s\"'<>]+/f/confirm/[A-Za-z0-9_.-]+", text)
            expect(found, f"no confirmation link in {name}: {text[:500]}")
            return found.group(0)
        time.sleep(0.2)
    raise AssertionError(f"no confirmation email to {address} in {OUTBOX}")


def heading(driver):
    return driver.find_element(By.TAG_NAME, "h1").text


def main():
    tag = secrets.token_hex(3)
    status, site = call("POST", "/api/v1/sites", {
        "name": f"Forms site {tag}", "slug": f"forms-{tag}", "from_name": "Forms"})
    expect(status == 201, f"site: {status} {site}")
    status, form = call("POST", "/api/v1/forms", {
        "site_id": site["id"], "name": "Our newsletter", "tags": ["newsletter"],
        "fields": [{"name": "first_name", "label": "First name", "required": True}]})
    expect(status == 201, f"form: {status} {form}")
    page = f"{BASE}/f/{form['id']}"
    address = f"reader-{tag}@example.com"

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["CHROMIUM"]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1100,1000", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=os.environ["CHROMEDRIVER"]),
                              options=options)
    driver.implicitly_wait(10)
    try:
        # A person: the page, a pause, the fields, the button.
        driver.get(page)
        expect(heading(driver) == "Our newsletter", f"page: {heading(driver)}")
        honeypot = driver.find_element(By.NAME, "website")
        expect(not honeypot.is_displayed(), "the honeypot is visible")
        shot(driver, "form-page.png")
        time.sleep(PERSON_DELAY)
        driver.find_element(By.NAME, "email").send_keys(address)
        driver.find_element(By.NAME, "first_name").send_keys("Ada")
        submit(driver, driver.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        expect(heading(driver) == "Check your inbox", f"after the signup: {heading(driver)}")
        shot(driver, "form-submitted.png")
        status, _ = call("GET", f"/api/v1/contacts/{urllib.parse.quote(address)}")
        expect(status == 404, f"the contact exists before the confirmation: {status}")

        link = confirmation_link(address)
        driver.get(link)
        expect(heading(driver) == "Subscription confirmed", f"confirmation: {heading(driver)}")
        shot(driver, "form-confirmed.png")
        status, contact = call("GET", f"/api/v1/contacts/{urllib.parse.quote(address)}")
        expect(status == 200, f"contact: {status} {contact}")
        expect(contact["first_name"] == "Ada" and contact["tags"] == ["newsletter"]
               and contact["site_ids"] == [site["id"]], f"contact: {contact}")
        driver.get(link)
        expect("confirmed already" in driver.page_source, "the second visit")
        query = urllib.parse.urlencode({"event": "form.submitted", "contact_id": contact["contact_id"]})
        status, events = call("GET", f"/api/v1/events?{query}")
        expect(status == 200 and len(events["data"]) == 1, f"form.submitted once: {status} {events}")

        # A bot that fills every input, the hidden honeypot too.
        driver.get(page)
        time.sleep(PERSON_DELAY)
        driver.find_element(By.NAME, "email").send_keys(f"bot-{tag}@example.com")
        driver.find_element(By.NAME, "first_name").send_keys("Bot")
        driver.execute_script("document.querySelector('input[name=website]').value = 'https://spam.example';")
        submit(driver, driver.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        expect(heading(driver) == "Signup not taken", f"honeypot: {heading(driver)}")
        shot(driver, "form-refused.png")
        # A bot that sends the form the moment the page is there.
        driver.get(page)
        button = driver.find_element(By.CSS_SELECTOR, "button[type=submit]")
        driver.execute_script(
            "document.querySelector('input[name=email]').value = arguments[0];"
            "document.querySelector('input[name=first_name]').value = 'Bot';"
            "document.querySelector('form').submit();", f"fast-{tag}@example.com")
        WebDriverWait(driver, 15).until(left_the_page(button))
        expect(heading(driver) == "Signup not taken", f"too fast: {heading(driver)}")
    finally:
        driver.quit()

    status, stats = call("GET", f"/api/v1/forms/{form['id']}/stats")
    expect(status == 200, f"stats: {status} {stats}")
    expect(stats["submissions"] == 1 and stats["confirmations"] == 1, f"stats: {stats}")
    expect(stats["refusals"] == {"honeypot": 1, "too_fast": 1, "rate_limited": 0, "total": 2},
           f"stats: {stats}")
    expect(stats["views"] == 3, f"stats: {stats}")
    print("browser test: the signup form passed")


if __name__ == "__main__":
    main()
