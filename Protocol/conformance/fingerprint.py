#!/usr/bin/env python3
"""The canonical text and fingerprint of a schema definition (Protocol/README.md, section 5.1,
"Canonical text of a definition"), written from the spec alone, and a check of the vectors in
Protocol/vectors/schema/.

    python3 Protocol/conformance/fingerprint.py [VECTORS_DIR]

prints one line per failed vector and "N passed, N failed"; exits 1 when any failed.
As a module (the conformance runner imports it):

    from fingerprint import canonical_text, fingerprint, check_vectors
"""

import base64
import hashlib
import json
import math
import os
import struct
import sys

HEADER = "ostore-schema-definition 1"
ACTIONS = ("NO ACTION", "RESTRICT", "SET NULL", "SET DEFAULT", "CASCADE")


def _lower_ascii(name):
    """The name's UTF-8 bytes with only A-Z lowercased (section 5.1: ASCII case)."""
    return bytes(b | 0x20 if 65 <= b <= 90 else b for b in name.encode("utf-8"))


def _order(name):
    return (_lower_ascii(name), name.encode("utf-8"))


def _hex(data):
    """Two lowercase hex digits per byte, '-' for no bytes."""
    return data.hex() if data else "-"


def _real(value):
    """A REAL value as read from a definition: a JSON number or "Infinity"/"-Infinity"."""
    if value == "Infinity":
        return math.inf
    if value == "-Infinity":
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("a real is a JSON number, \"Infinity\" or \"-Infinity\"")
    return float(value)


def _default(column):
    has_value = column.get("default") is not None
    has_expression = column.get("defaultExpression") is not None
    if has_value and has_expression:
        raise ValueError("column %s has both default and defaultExpression" % column["name"])
    if has_expression:
        return "expression " + _hex(column["defaultExpression"].encode("utf-8"))
    if not has_value:
        return "none"
    value = column["default"]
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError("a default is a value object with exactly one tag")
    (tag, content), = value.items()
    if tag == "null":
        return "null"
    if tag == "integer":
        number = int(content)
        if str(number) != content or not -(2 ** 63) <= number < 2 ** 63:
            raise ValueError("integer %r is not a canonical 64-bit decimal" % content)
        return "integer " + content
    if tag == "real":
        return "real " + struct.pack(">d", _real(content)).hex()
    if tag == "text":
        return "text " + _hex(content.encode("utf-8"))
    if tag == "blob":
        return "blob " + _hex(base64.b64decode(content, validate=True))
    raise ValueError("unknown value tag %r" % tag)


def _action(action):
    if action not in ACTIONS:
        raise ValueError("unknown foreign key action %r" % action)
    return action.lower().replace(" ", "-")


def canonical_text(definition):
    """The canonical text of a definition (a dict as decoded from JSON), as a str."""
    lines = [HEADER]
    for table in sorted(definition["tables"], key=lambda t: _order(t["name"])):
        lines.append("table %s %s %s" % (
            table["name"],
            "strict" if table.get("strict") else "not-strict",
            "without-rowid" if table.get("withoutRowID") else "rowid"))
        for column in sorted(table["columns"], key=lambda c: _order(c["name"])):
            lines.append("column %s %s %s %d %s" % (
                column["name"],
                _hex(column["type"].encode("utf-8")),
                "not-null" if column.get("notNull") else "nullable",
                column.get("primaryKey") or 0,
                _default(column)))
        foreign = []
        for key in table.get("foreignKeys") or []:
            foreign.append("foreign-key %s %s %s %s %s" % (
                ",".join(key["columns"]), key["parentTable"], ",".join(key["parentColumns"]),
                _action(key["onDelete"]), _action(key["onUpdate"])))
        lines.extend(sorted(foreign, key=lambda line: line.encode("utf-8")))
    return "\n".join(lines) + "\n"


def fingerprint(definition):
    """The lowercase hex SHA-256 of the definition's canonical text."""
    return hashlib.sha256(canonical_text(definition).encode("utf-8")).hexdigest()


def load_json(text):
    """JSON as the protocol reads it: `-0` stays a real (section 13), not Python's integer 0."""
    return json.loads(text, parse_int=lambda digits: -0.0 if digits == "-0" else int(digits))


def check_vectors(vectors_dir):
    """Checks every Protocol/vectors/schema/*.json case: definition -> canonicalText -> fingerprint.
    Returns (passed, failed, messages)."""
    passed, failed, messages = 0, 0, []
    names = sorted(name for name in os.listdir(vectors_dir) if name.endswith(".json"))
    for name in names:
        with open(os.path.join(vectors_dir, name), encoding="utf-8") as handle:
            case = load_json(handle.read())
        problems = []
        try:
            text = canonical_text(case["definition"])
            if text != case["canonicalText"]:
                problems.append("canonical text differs: got %r, vector has %r" % (text, case["canonicalText"]))
            digest = fingerprint(case["definition"])
            if digest != case["fingerprint"]:
                problems.append("fingerprint %s, vector has %s" % (digest, case["fingerprint"]))
        except (KeyError, ValueError, TypeError) as error:
            problems.append("cannot read the definition: %s" % error)
        if problems:
            failed += 1
            messages.extend("%s: %s" % (name, problem) for problem in problems)
        else:
            passed += 1
    return passed, failed, messages


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    vectors_dir = argv[1] if len(argv) > 1 else os.path.join(here, "..", "vectors", "schema")
    passed, failed, messages = check_vectors(vectors_dir)
    for message in messages:
        print(message)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
