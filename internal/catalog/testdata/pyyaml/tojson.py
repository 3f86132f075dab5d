"""Reads YAML documents with PyYAML's safe_load, as a Python host does.

stdin: a JSON array of YAML texts. stdout: a JSON array with one object per
text, {"ok": VALUE} or {"error": MESSAGE}. VALUE is the loaded document in
JSON, with the few Python values JSON lacks spelled so that they never equal
anything the sidecar publishes:

- a date becomes its ISO text (2025-06-02): what a host writes back for it;
- a datetime becomes {"$datetime": ISO text};
- a mapping with a key that is not a string becomes {"$pairs": [[key, value], ...]},
  each key in this same encoding;
- NaN and the infinities become {"$float": repr};
- anything else ({"$python": type name}).

Used by TestAgreesWithPyYAML (internal/catalog) and scripts/check-pyyaml.sh.
"""
import datetime
import json
import math
import sys

import yaml


def enc(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return {"$float": repr(v)}
        return v
    if isinstance(v, datetime.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {k: enc(x) for k, x in v.items()}
        return {"$pairs": [[enc(k), enc(x)] for k, x in v.items()]}
    return {"$python": type(v).__name__}


def main():
    out = []
    for text in json.load(sys.stdin):
        try:
            out.append({"ok": enc(yaml.safe_load(text))})
        except Exception as e:  # every refusal counts, whatever its class
            out.append({"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
