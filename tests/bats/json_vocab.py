"""json_vocab.py SCHEMA_DIR OUT_DIR — checks felixctl's and felix-inspect's JSON answers saved in
OUT_DIR (COMMAND.json: one document; COMMAND.jsonl: one per line) against
SCHEMA_DIR/COMMAND.json (JSON Schema 2020-12, $refs into defs.json), and the
vocabulary rules of felixctl(1) across all of them: snake_case keys, one
JSON type per key name (null aside), every time RFC 3339 with microseconds.
Prints each violation; exits 1 when there is one."""
import json, os, re, sys

import warnings

import jsonschema

warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver: the API of Debian 12's jsonschema 4.10

schema_dir, out_dir = sys.argv[1], sys.argv[2]
store = {}
for f in os.listdir(schema_dir):
    s = json.load(open(os.path.join(schema_dir, f)))
    store[s["$id"]] = s
problems = []
types = {}  # key -> {json type: where}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
DATE_LIKE = re.compile(r"^\d{4}-\d\d-\d\d([T ]|$)")  # a time under any key: its key must say it is one

def jtype(v):
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(type(v), "null")

def walk(v, where):
    if isinstance(v, dict):
        for k, x in v.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", k):
                problems.append("%s: key %r is not snake_case" % (where, k))
            if x is not None:
                types.setdefault(k, {}).setdefault(jtype(x), where)
            if (k.endswith("_at") or k == "timestamp") and x is not None and not (isinstance(x, str) and TIME.match(x)):
                problems.append("%s: %s = %r is not RFC 3339 with microseconds" % (where, k, x))
            if isinstance(x, str) and DATE_LIKE.match(x) and not (k.endswith("_at") or k == "timestamp"):
                problems.append("%s: %s = %r is a time under a key not named *_at" % (where, k, x))
            walk(x, where + "." + k)
    elif isinstance(v, list):
        for x in v:
            walk(x, where + "[]")

for f in sorted(os.listdir(out_dir)):
    command, ext = os.path.splitext(f)
    text = open(os.path.join(out_dir, f)).read()
    docs = [json.loads(l) for l in text.splitlines() if l.strip()] if ext == ".jsonl" else [json.loads(text)]
    if not docs:
        problems.append("%s: no output" % f)
    schema = store.get("https://felix.invalid/json/%s.json" % command)
    if schema is None:
        problems.append("%s: no schema docs/json/%s.json" % (f, command))
        continue
    resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    for i, d in enumerate(docs):
        for e in validator.iter_errors(d):
            problems.append("%s[%d] at %s: %s" % (f, i, "/".join(map(str, e.absolute_path)) or "top", e.message))
        walk(d, command)

for k, ts in sorted(types.items()):
    if len(ts) > 1:
        problems.append("key %r has %d types: %s" % (k, len(ts), ", ".join("%s (%s)" % kv for kv in sorted(ts.items()))))
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
