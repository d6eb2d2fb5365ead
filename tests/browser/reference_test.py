"""Each API's landing page and API reference in headless Chromium, with the network cut off:
every request not to the service goes to a proxy that does not answer (and no host name
resolves). The landing page links the reference; the reference page renders every operation
of the service's OpenAPI document with Swagger UI from the service's own, vendored files; the
browser asked nothing of any other origin and reported no Content-Security-Policy violation
nor script error. A screenshot of each page is saved.

Environment: MEMORY_URL, MAIL_URL, SCREENSHOT_DIR, CHROMIUM, CHROMEDRIVER.
"""

import json
import os
import sys
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

SERVICES = {"memory-api": os.environ["MEMORY_URL"], "mail-api": os.environ["MAIL_URL"]}
SHOTS = os.environ["SCREENSHOT_DIR"]
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def document(base):
    with urllib.request.urlopen(base + "/api/v1/openapi.json", timeout=20) as res:
        return json.load(res)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["CHROMIUM"]
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--window-size=1280,1000", "--no-first-run",
        # No network: every request but those to the services' address goes to a proxy
        # nobody runs, and no host name resolves.
        "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--disable-background-networking", "--disable-component-update",
        "--disable-domain-reliability", "--disable-sync", "--no-pings",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=os.environ["CHROMEDRIVER"]),
                            options=options)


def requested(driver):
    """The URLs the pages asked for since the last call (from the DevTools log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def problems(driver):
    """Console errors since the last call: CSP violations, failed loads, script errors."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def shot(driver, name):
    path = os.path.join(SHOTS, name)
    expect(driver.save_screenshot(path), f"screenshot {path} not saved")
    print(f"browser test: {path}")


def check(driver, service, base):
    doc = document(base)

    # The landing page, then its link to the reference.
    driver.get(base + "/")
    expect(driver.find_element(By.TAG_NAME, "h1").text == service, f"{service} landing: {driver.title}")
    shot(driver, f"10-{service}-landing.png")
    driver.find_element(By.ID, "reference").click()
    WebDriverWait(driver, 20).until(lambda d: d.current_url == base + "/docs")
    expect(driver.title == f"{service} · API reference", f"reference title: {driver.title}")

    # Swagger UI renders the document: its title and one section per tag (folded), then the
    # `contract` tag opened shows its operations. Opening every tag of mail-api's document at
    # once stalls Swagger UI partway (see the stop note), so the operations are checked on one.
    tags = sorted({t for item in doc["paths"].values() for m, op in item.items()
                   if m in METHODS for t in op.get("tags", [])})
    WebDriverWait(driver, 60).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock-tag-section")) >= len(tags))
    title = driver.find_element(By.CSS_SELECTOR, ".information-container .title").text
    expect(doc["info"]["title"] in title, f"{service}: the reference shows {title!r}")
    shown_tags = sorted(e.get_attribute("data-tag")
                        for e in driver.find_elements(By.CSS_SELECTOR, ".opblock-tag"))
    expect(shown_tags == tags, f"{service}: tags shown differ from the document: "
           f"{sorted(set(shown_tags) ^ set(tags))}")
    contract = sorted((m.upper(), path) for path, item in doc["paths"].items()
                      for m, op in item.items()
                      if m in METHODS and "contract" in op.get("tags", []))
    driver.find_element(By.ID, "operations-tag-contract").click()
    WebDriverWait(driver, 20).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= len(contract))
    shown = sorted(
        (block.find_element(By.CSS_SELECTOR, ".opblock-summary-method").text.upper(),
         block.find_element(By.CSS_SELECTOR, ".opblock-summary-path").get_attribute("data-path"))
        for block in driver.find_elements(By.CSS_SELECTOR, ".opblock")
    )
    expect(shown == contract, f"{service}: the contract tag shows {shown}, not {contract}")
    shot(driver, f"11-{service}-reference.png")

    # Open one operation: its parameters and answers are drawn too.
    first = driver.find_element(By.CSS_SELECTOR, ".opblock .opblock-summary-control")
    first.click()
    WebDriverWait(driver, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock.is-open .responses-wrapper"))
    shot(driver, f"12-{service}-operation.png")

    urls = requested(driver)
    elsewhere = [u for u in urls if not (u.startswith(base + "/") or u.startswith("data:"))]
    expect(not elsewhere, f"{service}: the pages asked other origins for {elsewhere}")
    for path in ("/docs", "/api/v1/openapi.json", "swagger-ui-bundle.js", "swagger-ui.css",
                 "/docs/assets/reference.js"):
        expect(any(path in u for u in urls), f"{service}: {path} was not loaded: {urls}")
    errors = problems(driver)
    expect(not errors, f"{service}: the browser reported {errors}")
    print(f"browser test: {service} reference shows its {len(tags)} tags and the contract operations, offline")


def main():
    driver = browser()
    driver.implicitly_wait(5)
    try:
        for service, base in SERVICES.items():
            check(driver, service, base)
    finally:
        driver.quit()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as err:
        print(f"browser test failed: {err}", file=sys.stderr)
        sys.exit(1)
