"""Scenario video of scripts/bench.sh: one marketing video rendered by the worker.

Usage: render-video.py BASE_URL KEY SECONDS WORKER_PID OUT_FILE [silent]. Posts a brief of
several scenes (format short_video, 1080x1920; narrated and captioned, or with `silent`
`brand.narration: false`), waits for the answer (polling the job when the route
answers 202), downloads the video through its signed URL into OUT_FILE, and prints
"HTTP_STATUS BYTES SECONDS COST_CENTS FFMPEG_PEAK_KB": seconds from the POST until the video
was downloadable, and the largest peak RSS seen of the worker's ffmpeg children (sampled every
20 ms while the render runs).
"""

import json
import os
import sys
import threading
import time
import urllib.request

base, key, seconds, worker_pid, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
narrated = sys.argv[6:] != ["silent"]
brief = (
    "Meet Ledgerly, the accounting app for small teams. "
    "Invoices go out in one click and get paid twice as fast. "
    "Bank feeds reconcile themselves every morning. "
    "Your accountant sees the same books, live. "
    "Start free today at ledgerly.example."
)
body = json.dumps({
    "brief": brief,
    "format": "short_video",
    "duration": seconds,
    "brand": {"primary": "#0b5fff", "background": "#0f172a", "text": "#ffffff", "narration": narrated},
}).encode()
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def call(url, data=None):
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    with urllib.request.urlopen(req, timeout=600) as res:
        return res.status, json.load(res)


def children(pid):
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += fh.read().split()
        except OSError:
            pass
    return found


peak = 0
done = threading.Event()


def sample():
    global peak
    while not done.is_set():
        for child in children(worker_pid):
            try:
                with open(f"/proc/{child}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            peak = max(peak, int(line.split()[1]))
            except OSError:
                pass
        time.sleep(0.02)


sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
start = time.monotonic()
status, answer = call(f"{base}/api/v1/render/video", body)
if status == 202:
    job_url = f"{base}/api/v1/render/video/jobs/{answer['jobId']}/status"
    while answer.get("status") not in ("completed", "failed"):
        if time.monotonic() - start > 600:
            sys.exit("the video did not finish in 600 s")
        time.sleep(0.1)
        status, answer = call(job_url)
    if answer["status"] != "completed":
        sys.exit(f"the video failed: {answer.get('error')}")
with urllib.request.urlopen(answer["asset_url"], timeout=60) as res, open(out, "wb") as fh:
    data = res.read()
    fh.write(data)
    code = res.status
total = time.monotonic() - start
done.set()
sampler.join()
print(code, len(data), f"{total:.3f}", answer["cost_cents"], peak)
