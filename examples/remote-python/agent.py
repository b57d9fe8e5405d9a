#!/usr/bin/env python3
"""A remote Baton agent in Python, standard library only (urllib, json, threading).

It pulls tasks of one agent from `baton serve` (docs/server.md, Remote agents): a long-polled claim,
heartbeats while it works (and stops when the server says the attempt was cancelled or lost), then
completes the task with its outputs, or fails it. A 422 means the output did not fit the phase's
declared outputs: the task stays claimed, so the agent may fix the output and complete again.

A claim may also answer 422 (UnresolvableInputError) or 409 (UpstreamIntentSuspendedError): a task of
this agent that the engine refused at claim time, before handing it out (its input cannot be resolved,
or an upstream phase waits for a human's answer). There is nothing to run: the agent says so and claims
again.

    BATON_URL=http://127.0.0.1:8080 BATON_API_KEY=... BATON_AGENT=summarize python3 agent.py [--once]
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

URL = os.environ.get("BATON_URL", "http://127.0.0.1:8080").rstrip("/")
KEY = os.environ.get("BATON_API_KEY")
AGENT = os.environ.get("BATON_AGENT", "summarize")


def post(path, body=None, timeout=70):
    """POST JSON; returns (status, parsed body or None)."""
    data = json.dumps(body or {}).encode("utf-8")
    req = urllib.request.Request(URL + path, data=data, method="POST", headers={"Content-Type": "application/json"})
    if KEY:
        req.add_header("Authorization", "Bearer " + KEY)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            text = res.read().decode("utf-8")
            return res.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        text = e.read().decode("utf-8", "replace")
        try:
            return e.code, (json.loads(text) if text else None)
        except ValueError:  # not Baton's answer (a proxy's error page)
            return e.code, {"error": {"code": "http-%d" % e.code, "message": text[:200]}}


def work(task, stopped):
    """The agent itself: the phase's inputs in, its outputs out."""
    n = task["input"].get("n")
    return {"m": "python saw n=%s" % n}


def heartbeat(token, every, stopped, done):
    """Tells the server the agent is alive; sets `stopped` when the attempt was cancelled or lost."""
    while not done.wait(every):
        try:
            status, body = post("/tasks/%s/heartbeat" % token, timeout=10)
        except OSError:
            continue
        if status == 409 or (status == 200 and body.get("stop")):
            stopped.set()
            return


def settle(path, body, lease_s, stopped):
    """Sends an outcome. A try whose answer never came (a reset, a refused connection: the network or a
    restarting server) goes again for up to a lease, while the heartbeats keep the task this agent's;
    otherwise the outcome would be lost and the task run again after its lease. A 409 after such a try
    may be the earlier try having landed."""
    deadline = time.monotonic() + max(lease_s, 5.0)
    wait = 0.1
    while True:
        try:
            return post(path, body)
        except OSError:
            if stopped.is_set() or time.monotonic() + wait > deadline:
                raise
            time.sleep(wait)
            wait = min(wait * 2, 2.0)


def run_one(task):
    token = task["token"]
    lease_s = task["lease_ms"] / 1000.0
    stopped, done = threading.Event(), threading.Event()
    beat = threading.Thread(target=heartbeat, args=(token, task["lease_ms"] / 3000.0, stopped, done), daemon=True)
    beat.start()
    try:
        try:
            output = work(task, stopped)
        except Exception as e:  # the agent failed: retryable unless it says otherwise
            settle("/tasks/%s/fail" % token, {"code": type(e).__name__, "message": str(e), "retryable": True}, lease_s, stopped)
            return
        if stopped.is_set():
            return  # cancelled or lost: the server no longer wants this attempt's outcome
        status, body = settle("/tasks/%s/complete" % token, {"output": output}, lease_s, stopped)
        if status == 422:  # the output does not fit the declared outputs: fail with the server's reason
            err = body["error"]
            settle("/tasks/%s/fail" % token, {"code": err["code"], "message": err["message"], "retryable": True}, lease_s, stopped)
        elif status != 200:
            print("completion refused: %s %s" % (status, body), file=sys.stderr)
    except OSError as e:
        # the server was away for longer than the lease (a restart, its network): the outcome is lost, the
        # server hands the task back (the task runs again); this agent goes on claiming
        print("outcome of task %s not delivered: %s" % (task["task_id"], e), file=sys.stderr)
    finally:
        done.set()


CLAIM_REJECTIONS = {422: "UnresolvableInputError", 409: "UpstreamIntentSuspendedError"}


def claim_rejected(status, body):
    """A claim's 422 or 409 naming a task the engine refused at claim time: reported, nothing to run."""
    err = (body or {}).get("error") or {}
    if status not in CLAIM_REJECTIONS or err.get("code") != CLAIM_REJECTIONS[status]:
        return False
    print("claim: task %s of run %s was refused at claim time (%s %s): %s" % (err.get("task_id"), err.get("run_id"), status, err.get("code"), err.get("message")), file=sys.stderr)
    return True


def main():
    once = "--once" in sys.argv[1:]
    while True:
        try:
            status, task = post("/agents/%s/claim?wait=20" % AGENT)
        except OSError as e:  # the server is away (a restart): try again
            print("claim: %s" % e, file=sys.stderr)
            threading.Event().wait(1)
            continue
        if status == 204 or claim_rejected(status, task):
            continue
        if status >= 500:  # the server, or a proxy before it, is away for now: try again
            print("claim: %s %s" % (status, task), file=sys.stderr)
            threading.Event().wait(1)
            continue
        if status != 200:
            print("claim refused: %s %s" % (status, task), file=sys.stderr)
            sys.exit(1)
        run_one(task)
        if once:
            return


if __name__ == "__main__":
    main()
