#!/usr/bin/env python3
"""Checks the protocol's test material against the JSON Schemas in this folder.

    python3 -m pip install jsonschema      # once (draft 2020-12 needs jsonschema >= 4.18)
    python3 Protocol/schemas/validate.py   # from the repository root, or from anywhere

What it checks, and why each check can fail:
- every schema is itself a valid draft 2020-12 schema;
- every message vector (Protocol/vectors/<message>.<name>.json) is strict JSON, matches the
  schema of <message>, and is written in canonical form (sorted keys, no whitespace), which is
  what SyncProtocol's ProtocolJSON.encode writes, so the Swift tests can compare bytes;
- every case of Protocol/vectors/values.json: a valid one is strict JSON, matches the value
  schema, has the storage class it claims and the canonical text it claims; an invalid one is
  refused, by the strict JSON rules or by the schema;
- every case of Protocol/vectors/requests.json: an accepted body matches its schema, a
  malformed_json body breaks a strict JSON rule, an invalid_message body breaks the schema.
  (The other errors depend on the server's clock, limits or the batch as a whole, which no
  JSON Schema can see; the Swift tests check them.)

"Strict JSON" here is an independent implementation of the protocol's JSON rules (see
Protocol/README.md, "JSON rules"): RFC 8259 syntax in UTF-8 without a byte order mark, no
object with a repeated key (compared after escapes are undone and after Unicode NFC
normalisation), no unpaired surrogate escapes, no NaN or Infinity literals, and nesting no
deeper than maxNestingDepth (32).

Exits with status 1 and lists every failure, or prints a summary and exits with status 0.
"""

import json
import math
import pathlib
import re
import sys
import unicodedata

try:
    import jsonschema
    from referencing import Registry, Resource
except ImportError:  # pragma: no cover - tells the reader what to install
    sys.exit("validate.py needs the jsonschema package: python3 -m pip install jsonschema")

HERE = pathlib.Path(__file__).resolve().parent
VECTORS = HERE.parent / "vectors"
MAX_NESTING_DEPTH = 32
MESSAGES = ["hello-request", "hello-response", "push-request", "push-response", "pull-request", "pull-response", "error"]


class NotStrictJSON(ValueError):
    pass


def strict_load(text):
    """Parses one JSON document under the protocol's rules; raises NotStrictJSON otherwise."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise NotStrictJSON(f"not UTF-8: {error}")
    if text.startswith("\ufeff"):
        raise NotStrictJSON("a byte order mark")

    def no_repeated_keys(pairs):
        seen = set()
        for key, _ in pairs:
            normal = unicodedata.normalize("NFC", key)
            if normal in seen:
                raise NotStrictJSON(f"key {key!r} appears twice in one object")
            seen.add(normal)
        return dict(pairs)

    def no_constants(name):
        raise NotStrictJSON(f"{name} is not JSON")

    try:
        document = json.loads(text, object_pairs_hook=no_repeated_keys, parse_constant=no_constants)
    except json.JSONDecodeError as error:
        raise NotStrictJSON(str(error))

    def walk(node, depth):
        if isinstance(node, (dict, list)):
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                raise NotStrictJSON(f"nested deeper than {MAX_NESTING_DEPTH}")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(key, str):
                    check_string(key)
                walk(child, depth)
        elif isinstance(node, str):
            check_string(node)

    def check_string(string):
        # Python reads "\ud800" as a lone surrogate; the protocol refuses it.
        if any(0xD800 <= ord(character) <= 0xDFFF for character in string):
            raise NotStrictJSON("an unpaired surrogate escape")

    walk(document, 0)
    return document


def canonical(node):
    """The text ProtocolJSON.encode writes for a parsed message: keys sorted, no whitespace,
    '/' and non-ASCII characters unescaped, reals in the shortest form that reads back exactly
    (integral values below 1e16 without a fraction, others as Python's repr, which matches
    Swift's description), and the number inside a {"real": ...} value always a real."""
    if isinstance(node, dict):
        if list(node) == ["real"] and isinstance(node["real"], int) and not isinstance(node["real"], bool):
            node = {"real": float(node["real"])}
        return "{" + ",".join(json.dumps(key, ensure_ascii=False) + ":" + canonical(node[key]) for key in sorted(node)) + "}"
    if isinstance(node, list):
        return "[" + ",".join(canonical(item) for item in node) + "]"
    if isinstance(node, float):
        if not math.isfinite(node):
            raise ValueError("no JSON text for a non-finite number")
        if node == 0:
            return "-0" if math.copysign(1, node) < 0 else "0"
        if node.is_integer() and abs(node) < 1e16:
            return str(int(node))
        return repr(node)
    return json.dumps(node, ensure_ascii=False)


def load_validators():
    resources = []
    schemas = {}
    for path in sorted(HERE.glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        resources.append((schema["$id"], Resource.from_contents(schema)))
        schemas[path.stem] = schema
    registry = Registry().with_resources(resources)
    validators = {name: jsonschema.Draft202012Validator(schema, registry=registry) for name, schema in schemas.items()}
    value_schema = {"$ref": schemas["common"]["$id"] + "#/$defs/value"}
    validators["value"] = jsonschema.Draft202012Validator(value_schema, registry=registry)
    return validators


def problems_with(validator, instance):
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}" for error in validator.iter_errors(instance)]


def main():
    failures = []
    counts = {"schemas": 0, "vectors": 0, "values": 0, "requests": 0}
    validators = load_validators()
    counts["schemas"] = len(list(HERE.glob("*.json")))
    missing = [name for name in MESSAGES if name not in validators]
    if missing:
        failures.append(f"no schema for {missing}")

    vector_pattern = re.compile(r"^(" + "|".join(MESSAGES) + r")\.[a-z0-9-]+\.json$")
    covered = set()
    for path in sorted(VECTORS.glob("*.json")):
        if path.name in ("values.json", "requests.json"):
            continue
        match = vector_pattern.match(path.name)
        if not match:
            failures.append(f"{path.name}: not named <message>.<name>.json")
            continue
        covered.add(match.group(1))
        counts["vectors"] += 1
        raw = path.read_bytes()
        try:
            document = strict_load(raw)
        except NotStrictJSON as error:
            failures.append(f"{path.name}: {error}")
            continue
        for problem in problems_with(validators[match.group(1)], document):
            failures.append(f"{path.name}: {problem}")
        text = raw.decode("utf-8")
        if text != canonical(document) + "\n":
            failures.append(f"{path.name}: not in canonical form (one line of sorted keys without whitespace, then a newline)")
    for name in MESSAGES:
        if name not in covered:
            failures.append(f"no vector for {name}")

    classes = ["null", "integer", "real", "text", "blob"]
    seen_classes = set()
    for case in json.loads((VECTORS / "values.json").read_text(encoding="utf-8")):
        counts["values"] += 1
        label = f"values.json {case['name']!r}"
        try:
            value = strict_load(case["json"])
        except NotStrictJSON as error:
            if case["valid"]:
                failures.append(f"{label}: valid, but {error}")
            continue
        problems = problems_with(validators["value"], value)
        if not case["valid"]:
            if not problems:
                failures.append(f"{label}: invalid, but the value schema accepts it")
            continue
        if problems:
            failures.append(f"{label}: {problems}")
            continue
        tag = next(iter(value))
        seen_classes.add(tag)
        if tag != case["storageClass"]:
            failures.append(f"{label}: tagged {tag}, listed as {case['storageClass']}")
        if canonical(value) != case["canonical"]:
            failures.append(f"{label}: canonical text {canonical(value)!r}, listed as {case['canonical']!r}")
    if seen_classes != set(classes):
        failures.append(f"values.json covers storage classes {sorted(seen_classes)}, not all of {classes}")

    for case in json.loads((VECTORS / "requests.json").read_text(encoding="utf-8")):
        counts["requests"] += 1
        label = f"requests.json {case['name']!r}"
        try:
            document = strict_load(case["body"])
        except NotStrictJSON as error:
            if case["error"] != "malformed_json":
                failures.append(f"{label}: expects {case['error']}, but the strict JSON rules refuse it: {error}")
            continue
        if case["error"] == "malformed_json":
            failures.append(f"{label}: expects malformed_json, but the strict JSON rules accept it")
            continue
        problems = problems_with(validators[case["message"]], document)
        if case["error"] is None and problems:
            failures.append(f"{label}: accepted by a server, but {problems}")
        if case["error"] == "invalid_message" and not problems:
            failures.append(f"{label}: expects invalid_message, but the {case['message']} schema accepts it")

    if failures:
        print("\n".join(failures))
        print(f"{len(failures)} failures")
        return 1
    print(
        f"ok: {counts['schemas']} schemas, {counts['vectors']} message vectors, "
        f"{counts['values']} value cases, {counts['requests']} request cases"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
