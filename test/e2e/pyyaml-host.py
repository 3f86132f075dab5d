"""A host that verifies skills as Python hosts do: with PyYAML.

For every skill that skills/list publishes (all pages, on the 2026-07-28
wire), it reads the skill's SKILL.md with resources/read, takes the
frontmatter from the served text (a BOM skipped; the lines between a first
line "---" and the next line "---", each with its line break), loads it with yaml.safe_load, turns what JSON
lacks into text the way such a host writes it back (json.dumps with
default=str: a date becomes 2025-06-02, a datetime 2025-06-02 10:30:00+00:00)
and compares the result with the published frontmatter, value by value
(a boolean is never a number; 1000 equals 1000.0).

Usage: python3 pyyaml-host.py MCP_URL
Prints one line per skill, "agree URI" or "differ URI: why", and exits 0;
exits 2 when the server cannot be asked. Written from the Skills extension's
wire shapes (skills/list, resources/read), not from the sidecar's code.
"""
import json
import sys
import urllib.request

import yaml

WIRE = "2026-07-28"


def call(url, method, params, ident):
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": WIRE,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": WIRE,
        "Mcp-Method": method,
    }
    if "uri" in params:
        headers["Mcp-Name"] = params["uri"]
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode("utf-8")
        sse = resp.headers.get("Content-Type", "").startswith("text/event-stream")
    messages = [text] if not sse else ["\n".join(
        line[5:].lstrip(" ") for line in event.splitlines() if line.startswith("data:"))
        for event in text.replace("\r\n", "\n").split("\n\n")]
    for m in messages:
        if not m.strip():
            continue
        msg = json.loads(m)
        if msg.get("id") == ident:
            if "error" in msg:
                raise RuntimeError("%s: %s" % (method, msg["error"]))
            return msg["result"]
    raise RuntimeError("%s: no reply with id %r" % (method, ident))


def frontmatter_text(text):
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    if not lines or lines[0].rstrip(" \t") != "---":
        raise ValueError("no opening ---")
    for i, line in enumerate(lines[1:], 1):
        if line.rstrip(" \t") == "---":
            return "".join(line + "\n" for line in lines[1:i])  # each line keeps its break
    raise ValueError("no closing ---")


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def main():
    url = sys.argv[1]
    skills, cursor, ident = [], None, 1
    for _ in range(100):
        params = {"cursor": cursor} if cursor else {}
        result = call(url, "skills/list", params, ident)
        ident += 1
        skills += result.get("skills", [])
        cursor = result.get("nextCursor")
        if not cursor:
            break
    for skill in skills:
        uri = skill["uri"]
        try:
            contents = call(url, "resources/read", {"uri": uri}, ident)["contents"]
            ident += 1
            loaded = yaml.safe_load(frontmatter_text(contents[0]["text"]))
            host = json.loads(json.dumps(loaded, default=str))
        except Exception as e:  # a host refuses the skill, whatever the reason
            print("differ %s: PyYAML: %s: %s" % (uri, type(e).__name__, e))
            continue
        if same(host, skill["frontmatter"]):
            print("agree " + uri)
        else:
            print("differ %s: listed %s, PyYAML %s" % (
                uri, json.dumps(skill["frontmatter"]), json.dumps(host)))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print("pyyaml-host: %s" % e, file=sys.stderr)
        sys.exit(2)
