#!/usr/bin/env python3
"""A remote Baton agent in Python, standard library only (urllib, json, threading).

It pulls tasks of one agent from `baton serve` (docs/server.md, Remote agents): a long-polled claim,
heartbeats while it works (and stops when the server says the attempt was cancelled or lost), then
completes the task with its outputs, or fails it. A 422 means the output did not fit the phase's
declared outputs: the task stays claimed, so the agent may fix the output and complete again.

A phase that declares AIP-16 files (inputsFiles / outputsFiles) has them listed in the claim's `files`:
the agent makes a scratch root of its own, fetches each input into `<root>/<key>` (GET
/tasks/{token}/files/{key}), sets `input["_workflowFsRoot"]` to that root so that `work` reads and writes
plain paths, sends each declared output it wrote back (PUT) before it completes, and removes the root.

A claim may also answer 422 (UnresolvableInputError) or 409 (UpstreamIntentSuspendedError): a task of
this agent that the engine refused at claim time, before handing it out (its input cannot be resolved,
or an upstream phase waits for a human's answer). There is nothing to run: the agent says so and claims
again.

    BATON_URL=http://127.0.0.1:8080 BATON_API_KEY=... BATON_AGENT=summarize python3 agent.py [--once]
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
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


def request(method, path, data=None, headers=None, timeout=70):
    """A request with raw bytes (a file); returns the open answer, or raises HTTPError / OSError."""
    req = urllib.request.Request(URL + path, data=data, method=method, headers=headers or {})
    if KEY:
        req.add_header("Authorization", "Bearer " + KEY)
    return urllib.request.urlopen(req, timeout=timeout)


def work(task, stopped):
    """The agent itself: the phase's inputs in, its outputs out. With files, plain paths under the root."""
    n = task["input"].get("n")
    root = task["input"].get("_workflowFsRoot")
    notes = os.path.join(root, "notes") if root else None
    if notes and os.path.isfile(notes):
        with open(notes, encoding="utf-8") as f:
            lines = f.read().splitlines()
        with open(os.path.join(root, "summary"), "w", encoding="utf-8") as f:
            f.write("python read %d lines\n" % len(lines))
        return {"m": "python saw n=%s and %d lines" % (n, len(lines))}
    return {"m": "python saw n=%s" % n}


class TaskEnded(Exception):
    """The server ended the attempt (409): nothing more to do for it."""


def header_content_type(t):
    """A declared content type as a header value: one that is not printable ASCII (a CR or LF) is sent as octet-stream."""
    if t and t[0] != " " and all(" " <= c <= "~" for c in t):
        return t
    return "application/octet-stream"


def file_path(token, key):
    return "/tasks/%s/files/%s" % (token, urllib.parse.quote(key, safe=""))


def fetch_inputs(task, lease_s, stopped):
    """A scratch root of this agent's own, with each staged input fetched into it (size and sha256 checked)."""
    root = tempfile.mkdtemp(prefix="baton-remote-files-")
    try:
        for f in task["files"]["inputs"]:
            def get(f=f):
                digest, size = hashlib.sha256(), 0
                with request("GET", file_path(task["token"], f["key"])) as res, open(os.path.join(root, f["key"]), "wb") as out:
                    for chunk in iter(lambda: res.read(1 << 16), b""):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
                return size, digest.hexdigest()
            try:
                size, sha = again(get, lease_s, stopped)
            except urllib.error.HTTPError as e:
                if e.code == 409:
                    raise TaskEnded()
                raise RuntimeError("input file %s could not be fetched: HTTP %s" % (f["key"], e.code))
            if size != f["size"] or sha != f["sha256"]:
                raise RuntimeError("input file %s came with other bytes than the server staged" % f["key"])
        return root
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def send_outputs(task, root, lease_s, stopped):
    """Each declared output the agent wrote (a regular file) goes back to the server; one not written is no error."""
    for f in task["files"]["outputs"]:
        source = os.path.join(root, f["key"])
        if os.path.islink(source) or not os.path.isfile(source):
            continue
        def put(f=f, source=source):
            with open(source, "rb") as data:
                headers = {"Content-Type": header_content_type(f.get("content_type")), "Content-Length": str(os.path.getsize(source))}
                with request("PUT", file_path(task["token"], f["key"]), data=data, headers=headers) as res:
                    return res.status
        try:
            again(put, lease_s, stopped)
        except urllib.error.HTTPError as e:
            if e.code == 409:
                raise TaskEnded()
            # too large (413), or refused: the completion goes on without it (the server records it as missing)
            print("output file %s not sent: HTTP %s %s" % (f["key"], e.code, e.read()[:200]), file=sys.stderr)


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
    return again(lambda: post(path, body), lease_s, stopped)


def again(call, lease_s, stopped):
    """`call()`, tried again while its answer never came (an OSError that is no HTTP answer), for up to a lease."""
    deadline = time.monotonic() + max(lease_s, 5.0)
    wait = 0.1
    while True:
        try:
            return call()
        except urllib.error.HTTPError:
            raise
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
    files = task.get("files")
    root = None
    try:
        try:
            if files:  # AIP-16: the body reads and writes plain paths under a root of this agent's own
                root = fetch_inputs(task, lease_s, stopped)
                task["input"]["_workflowFsRoot"] = root
            output = work(task, stopped)
        except TaskEnded:
            return
        except Exception as e:  # the agent failed: retryable unless it says otherwise
            settle("/tasks/%s/fail" % token, {"code": type(e).__name__, "message": str(e), "retryable": True}, lease_s, stopped)
            return
        if stopped.is_set():
            return  # cancelled or lost: the server no longer wants this attempt's outcome
        if root:
            try:
                send_outputs(task, root, lease_s, stopped)
            except TaskEnded:
                return
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
        if root:
            shutil.rmtree(root, ignore_errors=True)


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
