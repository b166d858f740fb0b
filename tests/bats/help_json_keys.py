"""help_json_keys.py FELIXCTL SCHEMA_DIR — every field name felixctl's --help
names for -o json (the names inside {...} after "-o json") is a property of
that command's schema in SCHEMA_DIR, at some depth: the help says nothing
about the JSON that the answer does not bear out. Prints each name that is
not; exits 1 when there is one."""
import json, os, re, subprocess, sys

ctl, schema_dir = sys.argv[1], sys.argv[2]
defs = json.load(open(os.path.join(schema_dir, "defs.json")))["$defs"]


def props(s):
    out = set()
    if isinstance(s, list):
        for x in s:
            out |= props(x)
    elif isinstance(s, dict):
        if "$ref" in s:
            out |= props(defs.get(s["$ref"].split("/")[-1], {}))
        for k, v in s.get("properties", {}).items():
            out.add(k)
            out |= props(v)
        for key in ("items", "anyOf", "allOf", "oneOf"):
            out |= props(s.get(key, []))
    return out


problems, checked = [], 0
for f in sorted(os.listdir(schema_dir)):
    command = f[:-5]
    if f == "defs.json" or command.startswith(("inspect-", "restore-point-")):  # not felixctl's
        continue
    words = command.split("-", 1)  # "config-get-contexts" is felixctl config get-contexts
    help_text = subprocess.run([ctl] + words + ["--help"], capture_output=True, text=True).stdout
    if not help_text:
        problems.append("%s: felixctl %s --help printed nothing" % (f, " ".join(words)))
        continue
    tail = help_text.split("-o json", 1)[1] if "-o json" in help_text else ""
    known = props(json.load(open(os.path.join(schema_dir, f))))
    for group in re.findall(r"\{([^{}]*)\}", re.sub(r"\s+", " ", tail)):
        for name in re.findall(r"[a-z][a-z0-9_]*", group):
            checked += 1
            if name not in known:
                problems.append("felixctl %s --help names %r for -o json; docs/json/%s has no such field" % (" ".join(words), name, f))
for p in problems:
    print(p)
print("%d names checked" % checked, file=sys.stderr)
sys.exit(1 if problems or not checked else 0)
