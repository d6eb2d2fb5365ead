"""Scenario pdf of scripts/bench.sh: one producible pdf of PAGES pages, rendered by the worker.

Usage: render-pdf.py BASE_URL KEY PAGES OUT_FILE. Posts the tree (a section per page: a
heading, four paragraphs, a five-row table, then a page break), polls the job's status every
20 ms until it finished, downloads the file through its signed URL into OUT_FILE, and prints
"HTTP_STATUS BYTES SECONDS TAKEN_SECONDS": seconds from the POST until the file was
downloadable, and until the worker took the job (`rendering` first seen; the total when never
seen).
"""

import json
import sys
import time
import urllib.request

base, key, pages, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
words = "the quarterly figures moved as forecast across every region and channel ".split()
paragraph = " ".join(words[i % len(words)] for i in range(90))
blocks = []
for page in range(pages):
    blocks.append({"type": "heading", "level": 2, "runs": [{"text": f"Section {page + 1}"}]})
    for n in range(4):
        blocks.append({"type": "paragraph", "runs": [{"text": f"{n + 1}. ", "bold": True}, {"text": paragraph}]})
    blocks.append({
        "type": "table",
        "header": [[{"text": "Region"}], [{"text": "Units"}], [{"text": "Revenue"}]],
        "rows": [[[{"text": f"R{r}"}], [{"text": str(100 * r)}], [{"text": f"{r * 1.5:.2f}"}]] for r in range(5)],
    })
    if page + 1 < pages:
        blocks.append({"type": "page_break"})
body = json.dumps({"format": "pdf", "ir": {"title": f"Bench report, {pages} pages", "blocks": blocks}}).encode()
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def call(url, data=None):
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    with urllib.request.urlopen(req, timeout=60) as res:
        return json.load(res)


start = time.monotonic()
job = call(f"{base}/api/v1/render/producibles/jobs", body)
status_url = f"{base}/api/v1/render/producibles/jobs/{job['jobId']}/status"
taken = None
while job["status"] not in ("completed", "failed"):
    if time.monotonic() - start > 600:
        sys.exit("the job did not finish in 600 s")
    time.sleep(0.02)
    job = call(status_url)
    if taken is None and job["status"] != "queued":
        taken = time.monotonic() - start
seconds = time.monotonic() - start
if job["status"] != "completed":
    print(f"500 0 {seconds:.3f} {seconds:.3f}")
    sys.exit(0)
with urllib.request.urlopen(job["signedUrl"], timeout=60) as res:
    data = res.read()
    code = res.status
open(out, "wb").write(data)
print(f"{code} {len(data)} {seconds:.3f} {taken if taken is not None else seconds:.3f}")
