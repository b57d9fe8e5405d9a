#!/usr/bin/env python3
"""A once-mode agent: one JSON request on stdin, the output object as JSON on stdout."""
import json
import sys

request = json.load(sys.stdin)
counts = []
for i, text in enumerate(request["input"]["docs"]):
    words = text.split()
    counts.append({"doc": f"doc-{i + 1}", "words": len(words), "longest": max(words, key=len) if words else ""})
json.dump({"counts": counts}, sys.stdout)
