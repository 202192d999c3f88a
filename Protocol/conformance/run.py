#!/usr/bin/env python3
"""The conformance kit of the OfflineStore sync protocol (Protocol/README.md, section 16.1).

Replays every vector of Protocol/vectors/ and a scenario suite against a live server, using only
what the specification says, and prints one line per failure and `N passed, N failed`:

    python3 Protocol/conformance/run.py --server http://127.0.0.1:8080 --admin 'ostore-server'

`--admin CMD` is how the kit makes datasets and tokens: it runs `CMD dataset create NAME
[--allow-major N]` and `CMD token create --dataset NAME [--read-only]` (the token is the last
line the second prints), the interface of `ostore-server`. The server must honour the test clock
(`OStore-Test-Now`, section 16.1). Python 3 standard library only.
"""

import argparse
import base64
import gzip
import itertools
import json
import math
import os
import re
import secrets
import select
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL = os.path.dirname(HERE)
TEST_CLOCK = "OStore-Test-Now"
SITE_RE = re.compile(r"^[0-9A-Fa-f]{32}$")
CLOCK_RE = re.compile(r"^(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$")
VERSION_RE = re.compile(r"^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$")
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------------------------
# JSON as the protocol reads it: integers keep their text (so `-0` stays a real), repeated keys
# are an error.


class Number(float):
    """A JSON number with its text, so `-0` and `1` in a real stay reals and integers stay exact."""

    def __new__(cls, text):
        value = float(text)
        if value == 0 and text.startswith("-"):
            value = -0.0
        number = super().__new__(cls, value)
        number.text = text
        return number

    def is_integral_text(self):
        return re.fullmatch(r"-?(0|[1-9][0-9]*)", self.text) is not None


def _pairs(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError("repeated member %r" % key)
        result[key] = value
    return result


def parse_json(data):
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    return json.loads(data, object_pairs_hook=_pairs, parse_int=Number, parse_float=Number)


def is_int(value):
    return isinstance(value, Number) and value.is_integral_text()


def strict_json(text):
    """Whether `text` passes the JSON rules of section 13 (syntax, no repeated member, no unpaired
    surrogate); Python's reader alone accepts NaN, Infinity and lone surrogates."""

    def refuse(constant):
        raise ValueError(constant)

    def strings(item):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, member in item.items():
                yield key
                yield from strings(member)
        elif isinstance(item, list):
            for member in item:
                yield from strings(member)

    try:
        parsed = json.loads(text, object_pairs_hook=_pairs, parse_constant=refuse)
    except ValueError:
        return False
    return not any(0xD800 <= ord(c) <= 0xDFFF for string in strings(parsed) for c in string)


def dumps(message):
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# The shapes of section 5.


def value_problem(value):
    if not isinstance(value, dict) or len(value) != 1:
        return "a value is an object with exactly one member"
    (tag, member), = value.items()
    if tag == "null":
        return None if member is True else "null's member is true"
    if tag == "integer":
        if not isinstance(member, str) or not re.fullmatch(r"-?(0|[1-9][0-9]*)", member) or member == "-0":
            return "an integer is a canonical decimal string"
        return None if -(2 ** 63) <= int(member) < 2 ** 63 else "an integer is 64 bits"
    if tag == "real":
        return None if isinstance(member, Number) or member in ("Infinity", "-Infinity") else "bad real"
    if tag == "text":
        return None if isinstance(member, str) else "text is a string"
    if tag == "blob":
        try:
            ok = isinstance(member, str) and base64.b64encode(base64.b64decode(member, validate=True)).decode() == member
        except Exception:
            ok = False
        return None if ok else "a blob is canonical base64"
    return "unknown tag %r" % tag


def change_problem(change):
    if not isinstance(change, dict):
        return "a change is an object"
    for member, check in (
        ("table", lambda v: isinstance(v, str) and IDENTIFIER_RE.match(v)),
        ("key", lambda v: isinstance(v, dict) and v),
        ("op", lambda v: v in ("insert", "update", "delete")),
        ("clock", lambda v: isinstance(v, str) and CLOCK_RE.match(v)),
        ("site", lambda v: isinstance(v, str) and SITE_RE.match(v)),
        ("seq", lambda v: is_int(v) and int(v.text) >= 0),
    ):
        if member not in change or not check(change[member]):
            return "change member %s is missing or malformed: %r" % (member, change.get(member))
    columns = change.get("columns") or {}
    if not isinstance(columns, dict) or (change["op"] == "update" and not columns):
        return "an update carries columns"
    for values in (change["key"], columns):
        for name, value in values.items():
            problem = value_problem(value)
            if problem or not IDENTIFIER_RE.match(name):
                return "column %s: %s" % (name, problem or "not an identifier")
    return None


def hello_response_problem(body):
    if not isinstance(body, dict):
        return "not an object"
    verdicts = ("compatible", "newerSchemaAvailable", "upgradeRequired", "protocolUnsupported")
    if body.get("verdict") not in verdicts:
        return "verdict %r" % body.get("verdict")
    if not isinstance(body.get("supportedProtocolVersions"), list) or not all(
        is_int(v) for v in body["supportedProtocolVersions"]
    ):
        return "supportedProtocolVersions"
    if (body["verdict"] == "protocolUnsupported") != ("protocolVersion" not in body):
        return "protocolVersion present unless the verdict is protocolUnsupported"
    if "protocolVersion" in body and not is_int(body["protocolVersion"]):
        return "protocolVersion"
    if body["verdict"] == "upgradeRequired" and not is_int(body.get("requiredMajorVersion")):
        return "requiredMajorVersion with upgradeRequired"
    if body.get("datasetSchemaVersion") is not None and not VERSION_RE.match(str(body["datasetSchemaVersion"])):
        return "datasetSchemaVersion"
    limits = body.get("limits")
    required = ("maxBodyBytes", "maxChangesPerPush", "maxChangesPerPull", "maxClockDriftMilliseconds",
                "maxIdentifierLength", "maxNestingDepth")
    if not isinstance(limits, dict) or not all(is_int(limits.get(name)) for name in required):
        return "limits"
    if limits.get("maxPushesInFlight") is not None and not is_int(limits["maxPushesInFlight"]):
        return "maxPushesInFlight"
    if not is_int(body.get("serverTime")) or not isinstance(body.get("message"), str):
        return "serverTime and message"
    if body.get("acknowledgedThrough") is not None and not is_int(body["acknowledgedThrough"]):
        return "acknowledgedThrough"
    return None


def push_response_problem(body):
    if not isinstance(body, dict) or not SITE_RE.match(str(body.get("site"))):
        return "site"
    return None if is_int(body.get("acknowledgedThrough")) and body["acknowledgedThrough"] >= 0 else "acknowledgedThrough"


def pull_response_problem(body):
    if not isinstance(body, dict) or not isinstance(body.get("changes"), list):
        return "changes"
    for change in body["changes"]:
        problem = change_problem(change)
        if problem:
            return problem
    if not isinstance(body.get("cursor"), str) or not isinstance(body.get("hasMore"), bool):
        return "cursor and hasMore"
    if body.get("phase") not in ("snapshot", "log"):
        return "phase"
    return None if is_int(body.get("remaining")) and body["remaining"] >= 0 else "remaining"


def error_problem(body, codes):
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict) or not isinstance(detail.get("message"), str):
        return "an error body is {\"error\":{\"code\",\"message\"}}"
    if detail.get("code") not in codes:
        return "code %r is not in section 14" % detail.get("code")
    if detail["code"] in ("invalid_change", "clock_out_of_range") and not is_int(detail.get("changeIndex")):
        return "changeIndex with %s" % detail["code"]
    if detail["code"] == "upgrade_required" and not is_int(detail.get("requiredMajorVersion")):
        return "requiredMajorVersion with upgrade_required"
    return None


# ---------------------------------------------------------------------------------------------
# The specification's own tables: section 14's codes and statuses, section 4's order of checks.


def spec_text():
    with open(os.path.join(PROTOCOL, "README.md"), encoding="utf-8") as file:
        return file.read()


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def error_table(text):
    """Code → HTTP status, from section 14's table."""
    table = {}
    for code, status in re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \|", section(text, "## 14. Errors"), re.M):
        table[code] = int(status)
    return table


def order_of_checks(text):
    """Section 4's numbered list of checks, as one text: a check's place is where it is named."""
    endpoints = section(text, "## 4. Endpoints")
    start = endpoints.index("A server checks a request in this order")
    end = endpoints.index("A server MAY answer `429 rate_limited`")
    return endpoints[start:end]


def hello_order(text):
    negotiation = section(text, "## 11. Versions and negotiation")
    start = negotiation.index("1. **Protocol.**")
    return negotiation[start:negotiation.index("Only a hello with a **read-write** token")]


# ---------------------------------------------------------------------------------------------
# HTTP/1.1 over a socket, so the kit can send what a library would refuse to (two Content-Length
# fields, a declared body that never comes).


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def json(self):
        return parse_json(self.body)

    def code(self):
        try:
            return self.json()["error"]["code"]
        except Exception:
            return None

    def describe(self):
        return "%d %s" % (self.status, self.body[:300].decode("utf-8", "replace"))


class Server:
    def __init__(self, url, admin, timeout):
        parsed = urllib.parse.urlsplit(url)
        self.host, self.tls = parsed.hostname, parsed.scheme == "https"
        self.port = parsed.port or (443 if self.tls else 80)
        self.admin = admin
        self.timeout = timeout
        self.run_id = secrets.token_hex(3)
        self.datasets = 0

    def send(self, method, path, headers=(), body=None, content_length=None, send_body=True, raw_head=None):
        connection = socket.create_connection((self.host, self.port), timeout=self.timeout)
        if self.tls:
            connection = ssl.create_default_context().wrap_socket(connection, server_hostname=self.host)
        try:
            if raw_head is None:
                lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (self.host, self.port), "Connection: close"]
                lines += ["%s: %s" % pair for pair in headers]
                if body is not None and content_length is None and not any(
                    name.lower() in ("content-length", "transfer-encoding") for name, _ in headers
                ):
                    content_length = len(body)
                if content_length is not None:
                    lines.append("Content-Length: %d" % content_length)
                raw_head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            connection.sendall(raw_head + (body if body is not None and send_body else b""))
            return self._read(connection)
        finally:
            connection.close()

    @staticmethod
    def _read(connection):
        data = b""
        while b"\r\n\r\n" not in data:
            try:
                chunk = connection.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ConnectionError("the server closed the connection before an answer")
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:] if ":" in line]
        length = next((int(value) for name, value in headers if name.lower() == "content-length"), None)
        while length is None or len(rest) < length:
            try:
                chunk = connection.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            rest += chunk
        return Answer(status, headers, rest if length is None else rest[:length])

    def post(self, dataset, endpoint, message, token, now=None, headers=None, raw=None):
        all_headers = [("Content-Type", "application/json")] if headers is None else list(headers)
        if token is not None:
            all_headers.append(("Authorization", "Bearer " + token))
        if now is not None:
            all_headers.append((TEST_CLOCK, now.text if isinstance(now, Number) else str(now)))
        body = raw if raw is not None else dumps(message)
        return self.send("POST", "/v1/datasets/%s/%s" % (dataset, endpoint), all_headers, body)

    def admin_run(self, *arguments):
        if self.admin is None:
            raise RuntimeError("give --admin CMD: the kit makes its datasets and tokens with it")
        # A shell command the arguments are appended to, so it may set variables: `VAR=x tool`.
        result = subprocess.run(["sh", "-c", self.admin + ' "$@"', "admin"] + list(arguments), capture_output=True,
                                text=True)
        if result.returncode != 0:
            raise RuntimeError("%s %s failed: %s" % (self.admin, " ".join(arguments), result.stderr.strip()))
        return result.stdout

    def dataset(self, purpose, allow_major=None):
        """A new dataset of this run, with a read-write and a read-only token."""
        self.datasets += 1
        name = ("ck-%s-%d-%s" % (self.run_id, self.datasets, purpose))[:63].rstrip("-_")
        arguments = ["dataset", "create", name] + (["--allow-major", str(allow_major)] if allow_major else [])
        self.admin_run(*arguments)
        return Dataset(self, name)

    def token(self, dataset, read_only=False):
        output = self.admin_run("token", "create", "--dataset", dataset, *(["--read-only"] if read_only else []))
        return [line for line in output.splitlines() if line.strip()][-1].strip()


class Dataset:
    def __init__(self, server, name):
        self.server, self.name = server, name
        self.token = server.token(name)
        self.read_only = server.token(name, read_only=True)

    def post(self, endpoint, message, token=None, **options):
        return self.server.post(self.name, endpoint, message, self.token if token is None else token, **options)


def new_site():
    return secrets.token_hex(16)


def hello(version="1.1.0", site=None, protocols=(1, 2), fp=None, tables=None):
    return {
        "protocolVersions": list(protocols),
        "site": site or new_site(),
        "schema": {"version": version, "fingerprint": fp or FINGERPRINTS.setdefault(version, secrets.token_hex(32)),
                   "tables": tables or {"items": ["id", "a", "b"]}},
    }


FINGERPRINTS = {}

# A schema definition (section 5.1) for the cases that need a server to know one: a STRICT table
# with a NOT NULL column without a default, NOT NULL columns with defaults, and a nullable one.
TASKS = {"tables": [{
    "name": "Tasks", "strict": True,
    "columns": [
        {"name": "ID", "type": "TEXT", "notNull": True, "primaryKey": 1},
        {"name": "title", "type": "TEXT", "notNull": True},
        {"name": "notes", "type": "TEXT", "notNull": True, "default": {"text": ""}},
        {"name": "done", "type": "INTEGER", "notNull": True, "default": {"integer": "0"}},
        {"name": "due", "type": "REAL"},
    ],
}]}


def fingerprints():
    """conformance/fingerprint.py, the canonical text of section 5.1, beside this file."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import fingerprint
    return fingerprint


def described_hello(definition, version="1.1.0", site=None):
    """A hello whose schema carries `definition` and its fingerprint."""
    message = hello(version, site=site, fp=fingerprints().fingerprint(definition),
                    tables={table["name"]: [column["name"] for column in table["columns"]]
                            for table in definition["tables"]})
    message["schema"]["definition"] = definition
    return message


def task(site, seq, op="insert", key="t1", columns=None, table="Tasks", key_name="ID"):
    result = {"table": table, "key": {key_name: {"text": key}}, "op": op, "clock": now_clock(), "site": site,
              "seq": seq}
    if op == "insert":
        result["columns"] = dict({"title": {"text": "write the kit"}}, **(columns or {}))
        result["columns"][key_name] = {"text": key}
    elif op == "update":
        result["columns"] = columns or {"title": {"text": "again"}}
    return result


def change(site, seq, op="insert", key="r1", columns=None, clock=None, table="items"):
    result = {"table": table, "key": {"id": {"text": key}}, "op": op, "clock": clock or now_clock(),
              "site": site, "seq": seq}
    if op == "insert":
        result["columns"] = dict(columns or {"a": {"integer": "1"}}, id={"text": key})
    elif op == "update":
        result["columns"] = columns or {"a": {"integer": "2"}}
    return result


def now_clock(offset=0):
    return "%d-0" % (int(time.time() * 1000) + offset)


def push(site, changes, version="1.1.0", protocol=2, after=None):
    message = {"protocolVersion": protocol, "schemaVersion": version, "site": site, "changes": changes}
    if after is not None:
        message["after"] = after
    return message


def pull(site, cursor=None, limit=None, version="1.1.0", protocol=2, wait=None):
    message = {"protocolVersion": protocol, "schemaVersion": version, "site": site}
    if cursor is not None:
        message["cursor"] = cursor
    if limit is not None:
        message["limit"] = limit
    if wait is not None:
        message["wait"] = wait
    return message


def pull_all(dataset, site, limit=None, version="1.1.0"):
    """Every page from a snapshot to the end of the log: (changes of the snapshot, of the log, cursor)."""
    snapshot, log, cursor = [], [], None
    for _ in range(10000):
        answer = dataset.post("pull", pull(site, cursor, limit, version))
        if answer.status != 200:
            raise AssertionError("pull: " + answer.describe())
        page = answer.json()
        problem = pull_response_problem(page)
        if problem:
            raise AssertionError("pull answer: " + problem)
        (snapshot if page["phase"] == "snapshot" else log).extend(page["changes"])
        cursor = page["cursor"]
        if not page["hasMore"]:
            return snapshot, log, cursor
    raise AssertionError("pull never ended")


# ---------------------------------------------------------------------------------------------
# Merged state as a snapshot serves it (section 10.2).


def version_of(change):
    return (change["clock"], change["site"].lower())


def rows_of(snapshot):
    """Snapshot changes → {(table, key text): row}, each row as the merge vectors' `final` describes it."""
    rows = {}
    for item in snapshot:
        identity = (item["table"].lower(), canonical(item["key"]))
        row = rows.setdefault(identity, {"columns": {}})
        if item["op"] == "delete":
            row["deleted"] = version_of(item)
        elif item["op"] == "insert":
            row["created"] = version_of(item)
            for name, value in item["columns"].items():
                if name.lower() not in {k.lower() for k in item["key"]}:
                    row["columns"][name.lower()] = (canonical(value), None)
        else:
            for name, value in item["columns"].items():
                row["columns"][name.lower()] = (canonical(value), version_of(item))
    for row in rows.values():
        row["state"] = "deleted" if "deleted" in row else "live" if "created" in row else "waiting"
    return rows


def canonical(value):
    def normalise(item):
        if isinstance(item, Number):
            return ("number", struct.pack(">d", float(item)))
        if isinstance(item, dict):
            return ("object", tuple(sorted((key, normalise(member)) for key, member in item.items())))
        if isinstance(item, list):
            return ("array", tuple(normalise(member) for member in item))
        return ("scalar", item)

    return normalise(value)


def expected_row(final):
    row = {"state": final["state"], "columns": {}}
    if final.get("created"):
        row["created"] = (final["created"]["clock"], final["created"]["site"])
    if final.get("deleted"):
        row["deleted"] = (final["deleted"]["clock"], final["deleted"]["site"])
    for name, cell in (final.get("columns") or {}).items():
        version = cell.get("version")
        row["columns"][name.lower()] = (
            canonical(cell["value"]), (version["clock"], version["site"]) if version else None)
    return row


def served_row(row):
    result = {"state": row["state"], "columns": {} if row["state"] == "deleted" else row["columns"]}
    if row["state"] == "deleted":
        result["deleted"] = row["deleted"]
    elif row["state"] == "live":
        result["created"] = row["created"]
    return result


# ---------------------------------------------------------------------------------------------
# The run.


class Run:
    def __init__(self, arguments):
        self.arguments = arguments
        self.server = Server(arguments.server, arguments.admin, arguments.timeout)
        self.limited = (Server(arguments.limited_server, arguments.limited_admin or arguments.admin, arguments.timeout)
                        if arguments.limited_server else None)
        self.vectors = arguments.vectors
        self.passed = self.failed = 0
        self.not_run = []
        self.spec = spec_text()
        self.codes = error_table(self.spec)
        self.lock = threading.Lock()

    def check(self, name, condition, detail=""):
        if self.arguments.only and not any(name.startswith(prefix) for prefix in self.arguments.only):
            return
        with self.lock:
            if condition:
                self.passed += 1
                if self.arguments.verbose:
                    print("ok   " + name)
            else:
                self.failed += 1
                print("FAIL %s: %s" % (name, detail))
                sys.stdout.flush()

    def skip(self, name, reason):
        self.not_run.append((name, reason))

    def expect(self, name, answer, status, code=None, shape=None):
        if code is not None and code in self.codes and self.codes[code] != status:
            self.check(name, False, "section 14 gives %s status %d, the kit expected %d" % (code, self.codes[code], status))
            return
        problem = None
        if answer.status != status:
            problem = "expected %d%s, got %s" % (status, " " + code if code else "", answer.describe())
        elif code is not None:
            try:
                body = answer.json()
                problem = error_problem(body, self.codes) or (
                    None if body["error"]["code"] == code else "expected %s, got %s" % (code, answer.describe()))
            except Exception as error:
                problem = "the error body is not JSON: %s (%s)" % (error, answer.describe())
            if not problem and not (answer.header("Content-Type") or "").lower().startswith("application/json"):
                problem = "an error answer has Content-Type: application/json"
        elif shape is not None:
            try:
                problem = shape(answer.json())
            except Exception as error:
                problem = "the answer is not JSON: %s (%s)" % (error, answer.describe())
        self.check(name, problem is None, problem or "")

    def vector(self, name):
        with open(os.path.join(self.vectors, name), encoding="utf-8") as file:
            return parse_json(file.read())

    def vector_text(self, name):
        with open(os.path.join(self.vectors, name), "rb") as file:
            return file.read()

    def part(self, title, body):
        if self.arguments.only and not any(title.startswith(prefix.split(".")[0]) for prefix in self.arguments.only):
            return
        try:
            body()
        except Exception as error:
            self.check(title, False, "stopped: %s: %s" % (type(error).__name__, error))

    def start(self):
        health = self.server.send("GET", "/healthz")
        self.check("healthz", health.status == 200 and health.json().get("status") == "ok", health.describe())
        if not health.json().get("testClock"):
            print("note: /healthz does not report testClock: the cases that fix the server's clock may fail")
        self.part("vectors", self.message_vectors)
        self.part("requests", self.request_cases)
        self.part("values", self.value_cases)
        self.part("merge", self.merge_cases)
        self.part("schema", self.schema_vectors)
        self.part("negotiation", self.negotiation)
        self.part("push", self.pushes)
        self.part("pipelined", self.pipelined)
        self.part("pull", self.pulls)
        self.part("live", self.live_pulls)
        self.part("lww", self.last_writer_wins)
        self.part("stash", self.stash)
        self.part("names", self.names)
        self.part("schema-rules", self.schema_rules)
        self.part("errors", self.error_codes)
        self.part("order", self.order)
        self.part("hello-order", self.hello_order)
        for name, reason in self.not_run:
            print("not run %s: %s" % (name, reason))
        print("%d passed, %d failed%s" % (self.passed, self.failed,
                                          ", %d not run" % len(self.not_run) if self.not_run else ""))
        return 1 if self.failed else 0

    # --- vectors/<message>.<name>.json -------------------------------------------------------

    def message_vectors(self):
        names = sorted(name for name in os.listdir(self.vectors) if name.endswith(".json") and name.count(".") == 2)
        shapes = {"hello-response": hello_response_problem, "push-response": push_response_problem,
                  "pull-response": pull_response_problem,
                  "error": lambda body: error_problem(body, self.codes)}
        for name in names:
            kind = name.split(".")[0]
            if kind in shapes:
                problem = shapes[kind](self.vector(name))
                self.check("vectors.%s.shape" % name, problem is None, problem or "")
            if kind == "error":
                code = self.vector(name)["error"]["code"]
                self.check("vectors.%s.code" % name, code in self.codes, "%s is not in section 14" % code)
        requests = [name for name in names if name.split(".")[0] in ("hello-request", "push-request", "pull-request")]
        dataset = self.server.dataset("vectors", allow_major=2)
        sites_said_hello = set()
        # Pushes before the push that follows them (`after`), as a client sends them.
        requests.sort(key=lambda name: (name.startswith("push-request.after"), name))
        for name in requests:
            message = self.vector(name)
            kind = name.split(".")[0]
            if kind == "hello-request":
                # Each on a dataset of its own: a hello of a new major moves its dataset.
                own = self.server.dataset("hello", allow_major=2)
                self.expect("vectors.%s" % name, own.post("hello", None, raw=self.vector_text(name)), 200,
                            shape=hello_response_problem)
                continue
            site = message["site"].lower()
            if site not in sites_said_hello:
                greeting = hello(str(message["schemaVersion"]), site=site)
                dataset.post("hello", greeting)
                sites_said_hello.add(site)
            answer = dataset.post(kind.split("-")[0], None, raw=self.vector_text(name))
            if kind == "pull-request" and "cursor" in message:
                # The vector's cursor was not issued by this server: section 10.1 refuses it.
                self.expect("vectors.%s" % name, answer, 400, "invalid_cursor")
            elif kind == "push-request":
                self.expect("vectors.%s" % name, answer, 200, shape=push_response_problem)
                if answer.status == 200:
                    last = max([int(c["seq"].text) for c in message["changes"]] or [0])
                    self.check("vectors.%s.acknowledged" % name, int(answer.json()["acknowledgedThrough"].text) >= last,
                               answer.describe())
            else:
                self.expect("vectors.%s" % name, answer, 200, shape=pull_response_problem)

    # --- vectors/requests.json ---------------------------------------------------------------

    def request_cases(self):
        cases = self.vector("requests.json")
        by_server = {}
        for case in cases:
            server = self.server
            if case.get("limits"):
                if self.limited is None:
                    self.skip("requests.%s" % case["name"],
                              "needs a server with limits %s (--limited-server)" % json.dumps(case["limits"]))
                    continue
                server = self.limited
            by_server.setdefault(id(server), (server, []))[1].append(case)
        for server, server_cases in by_server.values():
            dataset = server.dataset("requests")
            # 1.0.0, below the cases' 1.1.0, so the hello case records its own fingerprint.
            limits = dataset.post("hello", hello("1.0.0")).json()["limits"]
            for case in server_cases:
                name = "requests.%s" % case["name"]
                for member, value in (case.get("limits") or {}).items():
                    if int(limits.get(member, -1)) != value:
                        self.check(name, False, "the server states %s %s, the case needs %s" % (
                            member, limits.get(member), value))
                        break
                else:
                    endpoint = case["message"].split("-")[0]
                    answer = dataset.post(endpoint, None, raw=case["body"].encode("utf-8"), now=case.get("now"))
                    if case["error"] is None:
                        shapes = {"hello": hello_response_problem, "push": push_response_problem,
                                  "pull": pull_response_problem}
                        self.expect(name, answer, 200, shape=shapes[endpoint])
                    else:
                        self.expect(name, answer, self.codes.get(case["error"], 400), case["error"])
                        if case.get("changeIndex") is not None and answer.code() == case["error"]:
                            index = answer.json()["error"].get("changeIndex")
                            self.check(name + ".changeIndex", index == case["changeIndex"],
                                       "changeIndex %s, expected %s" % (index, case["changeIndex"]))

    # --- vectors/values.json -----------------------------------------------------------------

    def value_cases(self):
        dataset = self.server.dataset("values")
        writer, reader = new_site(), new_site()
        dataset.post("hello", hello(site=writer))
        valid = []
        seq = 0
        for index, case in enumerate(self.vector("values.json")):
            seq += 1
            key = "v%d" % index
            body = ('{"protocolVersion":2,"schemaVersion":"1.1.0","site":"%s","changes":[{"table":"items",'
                    '"key":{"id":{"text":"%s"}},"op":"update","columns":{"v":%s},"clock":"%s","site":"%s","seq":%d}]}'
                    % (writer, key, case["json"], now_clock(), writer, seq))
            answer = dataset.post("push", None, raw=body.encode("utf-8"))
            name = "values.%s" % case["name"]
            if case["valid"]:
                self.expect(name + ".push", answer, 200, shape=push_response_problem)
                valid.append((name, key, case))
            else:
                # Text that is not JSON (section 13) is malformed_json; a refused value, invalid_message.
                code = "invalid_message" if strict_json(case["json"]) else "malformed_json"
                self.expect(name, answer, 400, code)
        snapshot, _, _ = pull_all(dataset, reader)
        served = {item["key"]["id"]["text"]: item["columns"].get("v") for item in snapshot}
        for name, key, case in valid:
            value = served.get(key)
            expected = parse_json(case["canonical"])
            tag = next(iter(expected))
            same = value is not None and canonical(value) == canonical(expected) and next(iter(value)) == tag == case[
                "storageClass"]
            self.check(name + ".round-trip", same, "pushed %s, pulled %s, expected %s" % (
                case["json"], value if value is None else json.dumps(value), case["canonical"]))

    # --- vectors/merge/ ----------------------------------------------------------------------

    def merge_cases(self):
        folder = os.path.join(self.vectors, "merge")
        dataset = self.server.dataset("merge")
        seqs = {}
        expected = {}
        for file in sorted(os.listdir(folder)):
            case = self.vector(os.path.join("merge", file))
            changes = case["changes"]
            orders = list(itertools.permutations(range(len(changes)))) if case["orders"] == "all" else [
                tuple(range(len(changes)))]
            for number, order in enumerate(orders):
                key = "%s#%d" % (file, number)
                expected[key] = (file, order, expected_row(case["final"]))
                for index in order:
                    item = dict(changes[index])
                    site = item["site"]
                    seqs[site] = seqs.get(site, 0) + 1
                    item.update(table=case["table"], key={"id": {"text": key}}, seq=seqs[site])
                    if item["op"] == "insert":
                        item["columns"] = dict(item.get("columns") or {}, id={"text": key})
                    answer = dataset.post("push", push(site, [item]))
                    if answer.status != 200:
                        self.check("merge.%s.push" % file, False, answer.describe())
        snapshot, _, _ = pull_all(dataset, new_site())
        rows = {identity[1]: row for identity, row in rows_of(snapshot).items()}
        for key, (file, order, row) in expected.items():
            served = rows.get(canonical({"id": {"text": key}}))
            got = served_row(served) if served else None
            self.check("merge.%s.order-%s" % (file, "".join(map(str, order))), got == row,
                       "final row %s, expected %s" % (got, row))

    # --- vectors/schema/ ---------------------------------------------------------------------

    def schema_vectors(self):
        folder = os.path.join(self.vectors, "schema")
        passed, failed, messages = fingerprints().check_vectors(folder)
        with self.lock:
            self.passed += passed
            self.failed += failed
        for message in messages:
            print("FAIL schema: %s" % message)

    # --- scenarios ---------------------------------------------------------------------------

    def negotiation(self):
        dataset = self.server.dataset("negotiation", allow_major=2)
        site = new_site()
        answer = dataset.post("hello", hello("1.0.0", site=site), token=dataset.read_only)
        self.expect("negotiation.read-only-hello-records-nothing", answer, 200, shape=hello_response_problem)
        self.check("negotiation.read-only-hello-records-nothing.version",
                   answer.json().get("datasetSchemaVersion") is None, answer.describe())
        answer = dataset.post("hello", hello("1.0.0", site=site))
        self.check("negotiation.new-dataset-takes-the-client-version",
                   answer.status == 200 and answer.json()["verdict"] == "compatible"
                   and answer.json().get("datasetSchemaVersion") == "1.0.0", answer.describe())
        self.check("negotiation.chooses-the-highest-common-protocol",
                   answer.status == 200 and answer.json().get("protocolVersion") == max(
                       v for v in answer.json()["supportedProtocolVersions"] if v in (1, 2)), answer.describe())
        answer = dataset.post("hello", hello("1.1.0", site=new_site()))
        self.check("negotiation.newer-minor-moves-the-dataset",
                   answer.status == 200 and answer.json()["verdict"] == "compatible"
                   and answer.json().get("datasetSchemaVersion") == "1.1.0", answer.describe())
        answer = dataset.post("hello", hello("1.0.0", site=site))
        self.check("negotiation.older-minor-is-newerSchemaAvailable",
                   answer.status == 200 and answer.json()["verdict"] == "newerSchemaAvailable", answer.describe())
        answer = dataset.post("hello", hello("1.0.0", site=site, protocols=(99,)))
        self.check("negotiation.no-common-protocol-is-protocolUnsupported",
                   answer.status == 200 and answer.json()["verdict"] == "protocolUnsupported"
                   and "protocolVersion" not in answer.json(), answer.describe())
        self.expect("negotiation.another-fingerprint-is-schema_conflict",
                    dataset.post("hello", hello("1.1.0", site=site, fp=secrets.token_hex(32))), 409, "schema_conflict")
        self.expect("negotiation.a-major-above-the-allowed-is-major_not_allowed",
                    dataset.post("hello", hello("3.0.0", site=site)), 409, "major_not_allowed")
        self.expect("negotiation.a-push-of-a-newer-major-without-hello-is-major_not_allowed",
                    dataset.post("push", push(site, [change(site, 1)], version="2.0.0")), 409, "major_not_allowed")
        answer = dataset.post("hello", hello("2.0.0", site=new_site()))
        self.check("negotiation.an-allowed-newer-major-moves-the-dataset",
                   answer.status == 200 and answer.json()["verdict"] == "compatible"
                   and answer.json().get("datasetSchemaVersion") == "2.0.0", answer.describe())
        answer = dataset.post("hello", hello("1.1.0", site=site))
        self.check("negotiation.an-older-major-is-upgradeRequired",
                   answer.status == 200 and answer.json()["verdict"] == "upgradeRequired"
                   and answer.json().get("requiredMajorVersion") == 2, answer.describe())
        for endpoint, message in (("push", push(site, [change(site, 1)])), ("pull", pull(site))):
            answer = dataset.post(endpoint, message)
            self.expect("negotiation.%s-of-an-older-major-is-upgrade_required" % endpoint, answer, 409,
                        "upgrade_required")
            if answer.code() == "upgrade_required":
                self.check("negotiation.%s-of-an-older-major-names-the-major" % endpoint,
                           answer.json()["error"]["requiredMajorVersion"] == 2, answer.describe())
        other = self.server.dataset("unbounded")
        answer = other.post("hello", hello("7.0.0"))
        self.check("negotiation.a-new-dataset-takes-any-major", answer.status == 200 and answer.json()[
            "verdict"] == "compatible", answer.describe())

    def pushes(self):
        dataset = self.server.dataset("push")
        site, reader = new_site(), new_site()
        dataset.post("hello", hello(site=site))
        batch = [change(site, seq, key="k%d" % seq) for seq in (1, 2, 3)]
        for attempt in ("first", "replayed"):
            answer = dataset.post("push", push(site, batch))
            self.check("push.%s-batch-acknowledges-its-last-seq" % attempt,
                       answer.status == 200 and answer.json()["acknowledgedThrough"] == 3, answer.describe())
        overlapping = [change(site, seq, key="k%d" % seq) for seq in (2, 3, 4, 5)]
        answer = dataset.post("push", push(site, overlapping))
        self.check("push.overlapping-batch-stores-its-new-part",
                   answer.status == 200 and answer.json()["acknowledgedThrough"] == 5, answer.describe())
        answer = dataset.post("push", push(site, []))
        self.check("push.empty-batch-reports-the-mark",
                   answer.status == 200 and answer.json()["acknowledgedThrough"] == 5, answer.describe())
        answer = dataset.post("hello", hello(site=site))
        self.check("push.hello-states-the-mark", answer.json().get("acknowledgedThrough") in (None, 5), answer.describe())
        _, log, _ = pull_all(dataset, reader)
        snapshot, _, _ = pull_all(dataset, reader)
        self.check("push.stored-once", sorted(int(c["seq"].text) for c in log) in ([], [1, 2, 3, 4, 5]) and len(
            snapshot) == 5, "log seqs %s, snapshot %d rows" % ([c["seq"] for c in log], len(snapshot)))
        zipped = dataset.post("push", None, raw=gzip.compress(dumps(push(site, [change(site, 6, key="gz")]))),
                              headers=[("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
        self.check("push.a-gzip-body-is-read", zipped.status == 200 and zipped.json()["acknowledgedThrough"] == 6,
                   zipped.describe())
        refused = [change(site, 7), change(site, 7, key="other")]
        self.expect("push.seq-must-grow-along-the-batch", dataset.post("push", push(site, refused)), 400,
                    "invalid_change")
        answer = dataset.post("push", push(site, [change(site, 8, table="items"), change(site, 9, table="1bad")]))
        self.expect("push.a-refused-batch-stores-nothing", answer, 400, "invalid_change")
        answer = dataset.post("push", push(site, []))
        self.check("push.a-refused-batch-stores-nothing.mark", answer.json().get("acknowledgedThrough") == 6,
                   answer.describe())
        ahead = dataset.post("push", push(site, [change(site, 10, clock="%d-0" % (1764000000000 + 300001))]),
                             now=1764000000000)
        self.expect("push.a-clock-past-the-drift-is-clock_out_of_range", ahead, 400, "clock_out_of_range")
        exact = dataset.post("push", push(site, [change(site, 10, clock="%d-65535" % (1764000000000 + 300000))]),
                             now=1764000000000)
        self.expect("push.a-clock-exactly-at-the-drift-passes", exact, 200, shape=push_response_problem)

    def pipelined(self):
        dataset = self.server.dataset("pipelined")
        site = new_site()
        limits = dataset.post("hello", hello(site=site)).json()["limits"]
        if not limits.get("maxPushesInFlight"):
            self.skip("pipelined", "the server does not state maxPushesInFlight")
            return
        results = {}

        def later():
            results["second"] = dataset.post("push", push(site, [change(site, 3, key="b")], after=2))

        thread = threading.Thread(target=later)
        thread.start()
        time.sleep(0.3)
        first = dataset.post("push", push(site, [change(site, 1, key="a"), change(site, 2, key="a", op="update")]))
        thread.join()
        self.check("pipelined.first-push", first.status == 200 and first.json()["acknowledgedThrough"] >= 2,
                   first.describe())
        second = results["second"]
        self.check("pipelined.a-push-after-waits-for-the-one-before",
                   second.status == 200 and second.json()["acknowledgedThrough"] == 3, second.describe())
        started = time.time()
        missing = dataset.post("push", push(site, [change(site, 11, key="c")], after=10))
        self.expect("pipelined.a-push-after-a-missing-batch-is-previous_push_missing", missing, 409,
                    "previous_push_missing")
        self.check("pipelined.the-wait-is-bounded", time.time() - started < 30, "%.1f s" % (time.time() - started))
        self.expect("pipelined.after-in-protocol-1-is-invalid_message",
                    dataset.post("push", push(site, [change(site, 12, key="d")], protocol=1, after=3)), 400,
                    "invalid_message")
        self.expect("pipelined.after-not-below-the-first-seq-is-invalid_message",
                    dataset.post("push", push(site, [change(site, 12, key="d")], after=12)), 400, "invalid_message")

    def pulls(self):
        dataset = self.server.dataset("pull")
        writer, reader = new_site(), new_site()
        dataset.post("hello", hello(site=writer))
        dataset.post("push", push(writer, [change(writer, seq, key="row%d" % seq) for seq in range(1, 6)]))
        dataset.post("push", push(writer, [change(writer, 6, op="update", key="row1", columns={"a": {"integer": "9"}}),
                                           change(writer, 7, op="delete", key="row2")]))
        cursor, pages, phases = None, [], []
        while True:
            answer = dataset.post("pull", pull(reader, cursor, limit=2))
            if answer.status != 200:
                self.check("pull.pages", False, answer.describe())
                return
            page = answer.json()
            pages.append(page)
            phases.append(page["phase"])
            cursor = page["cursor"]
            if not page["hasMore"]:
                break
        snapshot = [c for page in pages if page["phase"] == "snapshot" for c in page["changes"]]
        # Section 10.2: a log page holds at most `limit` changes, a snapshot page at most `limit` whole rows.
        self.check("pull.pages-respect-the-limit",
                   all((len(rows_of(page["changes"])) if page["phase"] == "snapshot" else len(page["changes"])) <= 2
                       for page in pages),
                   [(page["phase"], len(page["changes"]), len(rows_of(page["changes"]))) for page in pages])
        pieces = {}
        for number, page in enumerate(pages):
            if page["phase"] == "snapshot":
                for identity in rows_of(page["changes"]):
                    pieces.setdefault(identity, set()).add(number)
        self.check("pull.a-snapshot-page-never-splits-a-row", all(len(found) == 1 for found in pieces.values()),
                   pieces)
        self.check("pull.snapshot-then-log", phases == sorted(phases, key=lambda phase: phase != "snapshot")
                   and phases[-1] == "log", phases)
        total = len(snapshot)
        counts = [page["remaining"] for page in pages if page["phase"] == "snapshot"]
        sizes = [len(page["changes"]) for page in pages if page["phase"] == "snapshot"]
        exact = all(counts[i] == total - sum(sizes[:i + 1]) for i in range(len(counts)))
        self.check("pull.snapshot-remaining-is-exact", exact, "remaining %s, sizes %s" % (counts, sizes))
        rows = rows_of(snapshot)
        live = sorted(identity[1] for identity, row in rows.items() if row["state"] == "live")
        self.check("pull.snapshot-holds-live-rows-and-tombstones",
                   len(live) == 4 and sum(row["state"] == "deleted" for row in rows.values()) == 1, rows)
        row1 = rows.get(("items", canonical({"id": {"text": "row1"}})))
        self.check("pull.snapshot-serves-a-later-column-as-an-update",
                   row1 is not None and row1["columns"].get("a", (None, None))[1] is not None, row1)
        dataset.post("push", push(writer, [change(writer, 8, key="row9")]))
        own = dataset.post("push", push(reader, [change(reader, 1, key="mine")]))
        answer = dataset.post("pull", pull(reader, cursor))
        page = answer.json() if answer.status == 200 else {}
        keys = [c["key"]["id"]["text"] for c in page.get("changes", [])]
        self.check("pull.the-log-resumes-after-the-cursor", answer.status == 200 and own.status == 200 and keys == [
            "row9"] and page["phase"] == "log", "%s %s" % (answer.describe(), keys))
        self.check("pull.caught-up-is-empty",
                   dataset.post("pull", pull(reader, page.get("cursor"))).json().get("changes") == [], "")
        bad = cursor[:-2] + ("A" if cursor[-2:-1] != "A" else "B") + cursor[-1:]
        self.expect("pull.a-changed-cursor-is-invalid_cursor", dataset.post("pull", pull(reader, bad)), 400,
                    "invalid_cursor")
        other = self.server.dataset("pull-other")
        self.expect("pull.another-datasets-cursor-is-invalid_cursor", other.post("pull", pull(reader, cursor)), 400,
                    "invalid_cursor")
        self.expect("pull.limit-0-is-invalid_message", dataset.post("pull", pull(reader, limit=0)), 400,
                    "invalid_message")
        self.expect("pull.read-only-token-may-pull", dataset.post("pull", pull(reader), token=dataset.read_only), 200,
                    shape=pull_response_problem)

    # --- live pulls (section 10.5) --------------------------------------------------------------

    def caught_up(self, purpose):
        """A dataset with one change of a writer, and a reader's cursor at the end of its log."""
        dataset = self.server.dataset(purpose)
        writer, reader = new_site(), new_site()
        answer = dataset.post("hello", hello(site=writer, protocols=(1, 2, 3)))
        dataset.post("push", push(writer, [change(writer, 1, key="first")]))
        return dataset, writer, reader, pull_all(dataset, reader)[2], answer.json()

    def waiting_pull(self, dataset, site, cursor, wait):
        """A live pull sent on another thread: (thread, results), results filled with the answer and its time."""
        results = {}

        def send():
            started = time.time()
            results["answer"] = dataset.post("pull", pull(site, cursor, protocol=3, wait=wait))
            results["took"] = time.time() - started

        thread = threading.Thread(target=send)
        thread.start()
        return thread, results

    def live_pulls(self):
        dataset, writer, reader, cursor, hello_answer = self.caught_up("live")
        if hello_answer.get("protocolVersion", 0) < 3 or not hello_answer["limits"].get("maxPullWaitMilliseconds"):
            self.skip("live", "the server does not hold pulls (protocol 3 with maxPullWaitMilliseconds above 0)")
            return
        thread, results = self.waiting_pull(dataset, reader, cursor, 10000)
        time.sleep(0.5)
        self.check("live.a-caught-up-pull-waits", "answer" not in results, results)
        dataset.post("push", push(writer, [change(writer, 2, op="update", key="first", columns={"a": {"integer": "2"}})]))
        thread.join(timeout=30)
        answer = results.get("answer")
        page = answer.json() if answer is not None and answer.status == 200 else {}
        self.check("live.another-sites-change-ends-the-wait",
                   [c["seq"] for c in page.get("changes", [])] == [2] and results.get("took", 99) < 8
                   and page.get("phase") == "log" and pull_response_problem(page) is None,
                   answer.describe() if answer is not None else "no answer")
        started = time.time()
        quiet = dataset.post("pull", pull(reader, page.get("cursor"), protocol=3, wait=1000))
        took = time.time() - started
        self.check("live.a-wait-ends-with-an-empty-log-page",
                   quiet.status == 200 and quiet.json()["changes"] == [] and not quiet.json()["hasMore"]
                   and 0.9 <= took < 10, "%s after %.2f s" % (quiet.describe(), took))
        thread, results = self.waiting_pull(dataset, writer, page.get("cursor"), 1500)
        time.sleep(0.3)
        dataset.post("push", push(writer, [change(writer, 3, key="mine")]))
        thread.join(timeout=30)
        own = results.get("answer")
        self.check("live.its-own-change-does-not-end-a-sites-wait",
                   own is not None and own.status == 200 and own.json()["changes"] == [] and results["took"] >= 1.4,
                   "%s after %.2f s" % (own.describe() if own else "no answer", results.get("took", 0)))
        started = time.time()
        snapshot = dataset.post("pull", pull(new_site(), protocol=3, wait=10000))
        self.check("live.a-snapshot-page-never-waits",
                   snapshot.status == 200 and snapshot.json()["phase"] == "snapshot" and time.time() - started < 5,
                   snapshot.describe())
        self.expect("live.wait-in-protocol-2-is-invalid_message",
                    dataset.post("pull", pull(reader, cursor, protocol=2, wait=1000)), 400, "invalid_message")
        self.expect("live.a-negative-wait-is-invalid_message",
                    dataset.post("pull", pull(reader, cursor, protocol=3, wait=-1)), 400, "invalid_message")

    def _too_many_waiting_pulls(self):
        """Live pulls of new sites, each on its own connection and left waiting, until the server
        refuses one (at most 600)."""
        dataset, _, _, cursor, _ = self.caught_up("waiting")
        held = []
        try:
            for _ in range(600):
                body = dumps(pull(new_site(), cursor, protocol=3, wait=8000))
                connection = socket.create_connection((self.server.host, self.server.port), timeout=self.server.timeout)
                if self.server.tls:
                    connection = ssl.create_default_context().wrap_socket(connection, server_hostname=self.server.host)
                head = ("POST /v1/datasets/%s/pull HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n"
                        "Content-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
                        % (dataset.name, self.server.host, self.server.port, dataset.token, len(body)))
                connection.sendall(head.encode("latin-1") + body)
                held.append(connection)
                # A waiting pull sends nothing; a refused one is answered at once.
                readable, _, _ = select.select([connection], [], [], 0.02)
                if readable:
                    answer = Server._read(connection)
                    if answer.status != 200:
                        return answer
            return Answer(0, [], b"600 pulls waited and none was refused")
        finally:
            for connection in held:
                connection.close()

    def last_writer_wins(self):
        dataset = self.server.dataset("lww")
        low, high = "1" * 32, "f" * 32
        dataset.post("hello", hello(site=low))
        base = int(time.time() * 1000) - 60000
        steps = [
            (low, change(low, 1, key="r", clock="%d-0" % base, columns={"a": {"text": "a0"}, "b": {"text": "b0"}})),
            (high, change(high, 1, op="update", key="r", clock="%d-5" % (base + 10), columns={"a": {"text": "high"}})),
            (low, change(low, 2, op="update", key="r", clock="%d-5" % (base + 10), columns={"a": {"text": "low"}})),
            (low, change(low, 3, op="update", key="r", clock="%d-6" % (base + 10), columns={"b": {"text": "counter"}})),
            (high, change(high, 2, op="update", key="r", clock="%d-0" % (base + 11), columns={"b": {"text": "later"}})),
            (low, change(low, 4, op="update", key="r", clock="%d-7" % (base + 10), columns={"b": {"text": "older"}})),
            (low, change(low, 5, key="gone", clock="%d-0" % base)),
            (high, change(high, 3, op="update", key="gone", clock="%d-0" % (base + 50))),
            (low, change(low, 6, op="delete", key="gone", clock="%d-0" % (base + 20))),
        ]
        for site, item in steps:
            answer = dataset.post("push", push(site, [item]))
            if answer.status != 200:
                self.check("lww.push", False, answer.describe())
        rows = rows_of(pull_all(dataset, new_site())[0])
        row = rows.get(("items", canonical({"id": {"text": "r"}})))
        def cell(name):
            return row["columns"].get(name, (None, None))[0] if row else None

        self.check("lww.equal-clocks-are-ordered-by-site", cell("a") == canonical({"text": "high"}), row)
        self.check("lww.each-column-merges-on-its-own", cell("b") == canonical({"text": "later"}), row)
        gone = rows.get(("items", canonical({"id": {"text": "gone"}})))
        self.check("lww.a-delete-wins-over-a-newer-update", gone is not None and gone["state"] == "deleted", gone)

    def stash(self):
        dataset = self.server.dataset("stash")
        newer, older = new_site(), new_site()
        dataset.post("hello", hello("1.1.0", site=newer, tables={"items": ["id", "a", "b", "colour"]}))
        answer = dataset.post("push", push(newer, [
            change(newer, 1, key="s", columns={"a": {"integer": "1"}, "colour": {"text": "red"}}),
            change(newer, 2, table="labels", key="l1", columns={"name": {"text": "x"}})]))
        self.check("stash.unknown-tables-and-columns-are-stored", answer.status == 200, answer.describe())
        dataset.post("hello", hello("1.0.0", site=older))
        snapshot, _, _ = pull_all(dataset, older, version="1.0.0")
        rows = rows_of(snapshot)
        row = rows.get(("items", canonical({"id": {"text": "s"}})))
        self.check("stash.a-column-the-client-lacks-is-served",
                   row is not None and "colour" in row["columns"], row)
        self.check("stash.a-table-the-client-lacks-is-served",
                   ("labels", canonical({"id": {"text": "l1"}})) in rows, list(rows))

    def names(self):
        """Section 5.2: names compare without regard to ASCII case; a server stores the spelling of
        the pushed version's definition, so one row is one row and is served in one spelling."""
        dataset = self.server.dataset("names")
        site = new_site()
        self.expect("names.hello", dataset.post("hello", described_hello(TASKS, site=site)), 200)
        insert = task(site, 1, table="tasks", key_name="id")
        insert["columns"] = {"id": {"text": "t1"}, "TITLE": {"text": "first"}}
        update = task(site, 2, op="update", table="TASKS", key_name="Id", columns={"Title": {"text": "second"}})
        answer = dataset.post("push", push(site, [insert, update]))
        self.check("names.push", answer.status == 200, answer.describe())
        snapshot, _, _ = pull_all(dataset, new_site())
        served = {(c["table"], json.dumps(c["key"], sort_keys=True)) for c in snapshot}
        self.check("names.one-row-whatever-the-case", len(served) == 1, sorted(served))
        self.check("names.served-as-the-definition-spells-them",
                   served == {("Tasks", '{"ID": {"text": "t1"}}')} and all(
                       name in ("ID", "title") for c in snapshot for name in c["columns"]), snapshot)

    # --- a server that knows the schema (section 5.2, "Changes and the schema") ------------------

    def schema_rules(self):
        dataset = self.server.dataset("schema-rules")
        site = new_site()
        wrong = described_hello(TASKS, site=site)
        wrong["schema"]["fingerprint"] = secrets.token_hex(32)
        self.expect("schema.a-fingerprint-that-is-not-the-definitions-is-invalid_message",
                    dataset.post("hello", wrong), 400, "invalid_message")
        answer = dataset.post("hello", described_hello(TASKS, site=site))
        self.check("schema.hello-with-a-definition",
                   answer.status == 200 and answer.json().get("verdict") == "compatible", answer.describe())
        other_build = json.loads(json.dumps(TASKS))
        other_build["tables"][0]["columns"][4]["notNull"] = True
        other_build["tables"][0]["columns"][4]["default"] = {"real": 0.0}
        self.expect("schema.another-definition-of-the-version-is-schema_conflict",
                    dataset.post("hello", described_hello(other_build, site=new_site())), 409, "schema_conflict")
        good = task(site, 1)
        breaking = {
            "unknown-table": task(site, 2, table="Ghosts"),
            "key-other-than-the-tables": task(site, 2, key_name="title"),
            "unknown-column": task(site, 2, columns={"colour": {"text": "red"}}),
            "not-null-set-to-null": task(site, 2, op="update", columns={"notes": {"null": True}}),
            "key-set-to-null": dict(task(site, 2, op="delete"), key={"ID": {"null": True}}),
            "insert-without-a-required-column": dict(task(site, 2), columns={"ID": {"text": "t1"}}),
            "strict-column-of-another-class": task(site, 2, op="update", columns={"done": {"text": "yes"}}),
            "strict-key-of-another-class": dict(task(site, 2, op="delete"), key={"ID": {"integer": "7"}}),
        }
        for name, change in sorted(breaking.items()):
            answer = dataset.post("push", push(site, [good, change]))
            error = (answer.json() or {}).get("error", {}) if answer.status == 400 else {}
            expected = "invalid_change" if name == "key-set-to-null" else "schema_violation"
            self.check("schema.%s" % name,
                       answer.code() == expected and error.get("changeIndex") == 1,
                       answer.describe())
        answer = dataset.post("push", push(site, []))
        self.check("schema.a-refused-push-stores-nothing",
                   answer.status == 200 and answer.json().get("acknowledgedThrough") == 0, answer.describe())
        passing = {
            "a-nullable-column-set-to-null": task(site, 2, op="update", columns={"due": {"null": True}}),
            "an-integer-in-a-real-column": task(site, 3, op="update", columns={"due": {"integer": "3"}}),
            "an-insert-leaving-out-columns-with-defaults": task(site, 4, key="t2"),
        }
        answer = dataset.post("push", push(site, [good] + sorted(passing.values(), key=lambda change: change["seq"])))
        self.check("schema.changes-the-definition-allows-are-stored",
                   answer.status == 200 and answer.json().get("acknowledgedThrough") == 4, answer.describe())
        # Section 7.3: a definition of another version of the major that drops what this one
        # declares (here NOT NULL) is no minor step, in either direction, and is not recorded.
        looser = json.loads(json.dumps(TASKS))
        looser["tables"][0]["columns"][2]["notNull"] = False
        for version in ("1.2.0", "1.0.9"):
            self.expect("schema.a-definition-that-is-no-minor-step-is-schema_conflict-" + version,
                        dataset.post("hello", described_hello(looser, version=version, site=new_site())),
                        409, "schema_conflict")
        # A version no hello described is checked by the nearest definition of its major: the one
        # above it by every rule, else the one below it for what that one declares.
        older = new_site()
        dataset.post("hello", hello("1.0.3", site=older))
        answer = dataset.post("push", push(older, [task(older, 1, op="update", columns={"notes": {"null": True}})],
                                           version="1.0.3"))
        self.check("schema.an-older-undescribed-version-is-checked-by-the-definition-above",
                   answer.code() == "schema_violation", answer.describe())
        answer = dataset.post("push", push(older, [task(older, 1, table="Ghosts")], version="1.0.3"))
        self.check("schema.an-older-undescribed-version-knows-no-table-the-definition-above-lacks",
                   answer.code() == "schema_violation", answer.describe())
        newer = new_site()
        dataset.post("hello", hello("1.4.0", site=newer))
        answer = dataset.post("push", push(newer, [task(newer, 1, op="update", columns={"notes": {"null": True}})],
                                           version="1.4.0"))
        self.check("schema.a-newer-undescribed-version-is-checked-by-the-definition-below",
                   answer.code() == "schema_violation", answer.describe())
        ghost = task(newer, 1, table="Ghosts")
        colour = task(newer, 2, op="update", columns={"colour": {"text": "red"}})
        answer = dataset.post("push", push(newer, [ghost, colour], version="1.4.0"))
        self.check("schema.a-newer-undescribed-version-may-name-what-the-definition-below-lacks",
                   answer.status == 200 and answer.json().get("acknowledgedThrough") == 2, answer.describe())
        undescribed = self.server.dataset("schema-undescribed")
        other = new_site()
        undescribed.post("hello", hello("1.1.0", site=other))
        answer = undescribed.post("push", push(other, [task(other, 1, table="Ghosts")]))
        self.check("schema.a-major-without-a-definition-is-not-checked", answer.status == 200, answer.describe())

    def _schema_violation(self):
        dataset = self.server.dataset("errors-schema")
        site = new_site()
        dataset.post("hello", described_hello(TASKS, site=site))
        return dataset.post("push", push(site, [task(site, 1, op="update", columns={"title": {"null": True}})]))

    # --- every error code ----------------------------------------------------------------------

    def error_codes(self):
        server = self.server
        dataset = server.dataset("errors", allow_major=2)
        other = server.dataset("errors-other")
        site = new_site()
        dataset.post("hello", hello(site=site))
        path = "/v1/datasets/%s/push" % dataset.name
        auth = ("Authorization", "Bearer " + dataset.token)
        json_type = ("Content-Type", "application/json")
        body = dumps(push(site, [change(site, 1)]))
        limits = dataset.post("hello", hello(site=site)).json()["limits"]
        provoked = {
            "malformed_json": lambda: dataset.post("push", None, raw=b"{"),
            "invalid_message": lambda: dataset.post("push", {"protocolVersion": 2}),
            "invalid_change": lambda: dataset.post("push", push(site, [change(site, 1, table="1x")])),
            "clock_out_of_range": lambda: dataset.post(
                "push", push(site, [change(site, 1, clock="1764000400000-0")]), now=1764000000000),
            "too_many_changes": lambda: dataset.post("push", push(site, [
                change(site, seq, key="t%d" % seq) for seq in range(1, int(limits["maxChangesPerPush"]) + 2)])),
            "invalid_cursor": lambda: dataset.post("pull", pull(site, "not-a-cursor")),
            "protocol_unsupported": lambda: dataset.post("push", push(site, [], protocol=99)),
            "unauthorized": lambda: server.send("POST", path, [json_type], body),
            "forbidden": lambda: dataset.post("push", push(site, []), token=other.token),
            "read_only_token": lambda: dataset.post("push", push(site, []), token=dataset.read_only),
            "site_forbidden": lambda: dataset.post(
                "push", push(site, [change(site, 50)]), token=server.token(dataset.name)),
            "not_found": lambda: server.send("POST", "/v1/datasets/Not_Valid/push", [auth, json_type], body),
            "method_not_allowed": lambda: server.send("GET", path, [auth]),
            "upgrade_required": lambda: self._upgrade_required(),
            "schema_violation": lambda: self._schema_violation(),
            "schema_conflict": lambda: dataset.post("hello", hello(site=site, fp=secrets.token_hex(32))),
            "major_not_allowed": lambda: dataset.post("hello", hello("3.0.0", site=site)),
            "previous_push_missing": lambda: dataset.post("push", push(site, [change(site, 101)], after=100)),
            "too_many_waiting_pulls": lambda: self._too_many_waiting_pulls(),
            "body_too_large": lambda: server.send("POST", path, [auth, json_type], b"",
                                                  content_length=int(limits["maxBodyBytes"]) + 1, send_body=False),
            "unsupported_media_type": lambda: server.send("POST", path, [auth, ("Content-Type", "text/plain")], body),
            "unsupported_content_encoding": lambda: server.send(
                "POST", path, [auth, json_type, ("Content-Encoding", "br")], body),
            "invalid_body_encoding": lambda: server.send(
                "POST", path, [auth, json_type, ("Content-Encoding", "gzip")], b"not gzip"),
            "malformed_request": lambda: server.send(
                "POST", path, [auth, json_type, ("Content-Length", str(len(body))), ("Content-Length", str(len(body)))],
                body),
            "length_required": lambda: server.send(
                "POST", path, [auth, json_type, ("Transfer-Encoding", "chunked")],
                b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)),
            "uri_too_long": lambda: server.send("POST", path + "?" + "&".join("q%d=1" % i for i in range(200)),
                                                [auth, json_type], body),
            "headers_too_large": lambda: server.send(
                "POST", path, [auth, json_type] + [("X-Filler-%d" % i, "1") for i in range(200)], body),
        }
        outside = {"rate_limited": "a server need not limit rates, and no request makes it",
                   "internal_error": "no request may make a conforming server fail",
                   "unavailable": "only a server that cannot serve answers it",
                   "out_of_scope": "the kit's admin interface sets no scope rules, which the code needs"}
        for code in sorted(self.codes):
            if code in outside:
                self.skip("errors.%s" % code, outside[code])
            elif code not in provoked:
                self.check("errors.%s" % code, False, "section 14 names a code the kit cannot provoke yet")
            else:
                self.expect("errors.%s" % code, provoked[code](), self.codes[code], code)
        answer = provoked["unauthorized"]()
        self.check("errors.unauthorized.www-authenticate",
                   (answer.header("WWW-Authenticate") or "").lower().startswith("bearer"), answer.describe())
        answer = provoked["method_not_allowed"]()
        self.check("errors.method_not_allowed.allow", answer.header("Allow") == "POST", answer.headers)

    def _upgrade_required(self):
        dataset = self.server.dataset("upgrade", allow_major=2)
        dataset.post("hello", hello("2.0.0"))
        return dataset.post("pull", pull(new_site(), version="1.1.0"))

    # --- the order of checks (section 4), table-driven from the spec's list --------------------

    def order(self):
        server = self.server
        text = order_of_checks(self.spec)
        dataset = server.dataset("order", allow_major=2)
        other = server.dataset("order-other")
        owner, site = new_site(), new_site()
        dataset.post("hello", hello("2.0.0", site=owner))
        dataset.post("hello", hello("2.0.0", site=site))
        taken_by_another_token = server.token(dataset.name)
        base_changes = lambda: [change(site, 1)]

        class Request:
            def __init__(self, endpoint):
                self.endpoint = endpoint
                self.dataset = dataset.name
                self.method = "POST"
                self.token = dataset.token
                self.headers = [("Content-Type", "application/json")]
                self.encoding = None
                self.message = (push(site, base_changes(), version="2.0.0") if endpoint == "push" else pull(
                    site, version="2.0.0"))
                self.raw = None
                self.declared = None
                self.duplicate_length = False

            def send(self):
                headers = list(self.headers)
                if self.token:
                    headers.append(("Authorization", "Bearer " + self.token))
                if self.encoding:
                    headers.append(("Content-Encoding", self.encoding))
                body = self.raw if self.raw is not None else dumps(self.message)
                if self.encoding == "gzip" and self.raw is None:
                    body = gzip.compress(body)
                if self.duplicate_length:
                    headers += [("Content-Length", str(len(body)))] * 2
                path = "/v1/datasets/%s/%s" % (self.dataset, self.endpoint)
                if self.declared is not None:
                    return server.send(self.method, path, headers, b"", content_length=self.declared, send_body=False)
                return server.send(self.method, path, headers, body)

        limits = dataset.post("hello", hello("2.0.0", site=site)).json()["limits"]

        def set_message(member, value):
            def apply(request):
                request.message[member] = value
            return apply

        def first_change(member, value):
            def apply(request):
                request.message["changes"][0][member] = value
            return apply

        def malformed(request):
            request.raw = dumps(request.message)[:-1]

        def bad_gzip(request):
            request.encoding = "gzip"
            request.raw = (request.raw if request.raw is not None else dumps(request.message))[::-1]

        # (name, what section 4 calls it, the answer, the endpoints, the parts of the request it
        # changes, how): the order between them is read from section 4, not from this table.
        faults = [
            ("framing", "`400 malformed_request`", "malformed_request", ("push", "pull"), {"length"},
             lambda r: setattr(r, "duplicate_length", True)),
            ("declared-size", "a `Content-Length` above the limit (`413`)", "body_too_large", ("push", "pull"),
             {"length", "body"}, lambda r: setattr(r, "declared", int(limits["maxBodyBytes"]) + 1)),
            ("content-coding", "an unsupported content coding (`415`)", "unsupported_content_encoding",
             ("push", "pull"), {"encoding"}, lambda r: setattr(r, "encoding", "br")),
            ("route", "the route: path, dataset name, method (`404`", "not_found", ("push", "pull"), {"dataset"},
             lambda r: setattr(r, "dataset", "Bad_Name")),
            ("token", "the token (`401`", "unauthorized", ("push", "pull"), {"token"},
             lambda r: setattr(r, "token", None)),
            ("dataset-token", "`403 forbidden`", "forbidden", ("push", "pull"), {"token", "dataset"},
             lambda r: setattr(r, "token", other.token)),
            ("read-only", "`403 read_only_token`", "read_only_token", ("push",), {"token"},
             lambda r: setattr(r, "token", dataset.read_only)),
            ("content-type", "the content type (`415`)", "unsupported_media_type", ("push", "pull"), {"type"},
             lambda r: setattr(r, "headers", [("Content-Type", "text/plain")])),
            ("gzip", "invalid gzip (`400 invalid_body_encoding`)", "invalid_body_encoding", ("push", "pull"),
             {"encoding", "body"}, bad_gzip),
            ("json", "the JSON rules of section 13 (`400 malformed_json`)", "malformed_json", ("push", "pull"),
             {"body"}, malformed),
            ("message", "(`400 invalid_message`)", "invalid_message", ("push", "pull"), {"site"},
             set_message("site", "not-a-site")),
            ("protocol", "(`400 protocol_unsupported`)", "protocol_unsupported", ("push", "pull"), {"protocol"},
             set_message("protocolVersion", 99)),
            ("major", "(`409 upgrade_required`)", "upgrade_required", ("push", "pull"), {"version"},
             set_message("schemaVersion", "1.1.0")),
            ("batch", "`invalid_change`", "invalid_change", ("push",), {"changes"}, first_change("table", "1bad")),
            ("site", "then its `site` (section 7.1: `403 site_forbidden`)", "site_forbidden", ("push",), {"token"},
             lambda r: setattr(r, "token", taken_by_another_token)),
            ("cursor", "(`400 invalid_cursor`)", "invalid_cursor", ("pull",), {"cursor"},
             set_message("cursor", "not-a-cursor")),
        ]
        # Assumption of the table: `site_forbidden` is for the site bound to the first token.
        dataset.post("push", push(site, [], version="2.0.0"))
        places = {}
        for name, words, code, _, _, _ in faults:
            place = text.find(words)
            if place < 0:
                self.check("order.%s" % name, False, "section 4 no longer says %r: update the kit's table" % words)
            places[name] = place
        for endpoint in ("push", "pull"):
            applicable = [fault for fault in faults if endpoint in fault[3] and places[fault[0]] >= 0]
            for first, second in itertools.combinations(applicable, 2):
                if first[4] & second[4]:
                    continue
                earlier, later = sorted((first, second), key=lambda fault: places[fault[0]])
                request = Request(endpoint)
                later[5](request)
                earlier[5](request)
                answer = request.send()
                self.expect("order.%s.%s-before-%s" % (endpoint, earlier[0], later[0]), answer,
                            self.codes[earlier[2]], earlier[2])

    def hello_order(self):
        """Section 11.1: protocol, fingerprint, allowed major, then the verdicts; read from its list."""
        text = hello_order(self.spec)
        dataset = self.server.dataset("hello-order", allow_major=2)
        site = new_site()
        old_fingerprint = FINGERPRINTS.setdefault("1.1.0", secrets.token_hex(32))
        dataset.post("hello", hello("1.1.0", site=site))
        dataset.post("hello", hello("2.0.0", site=site))
        rules = {"protocol": text.find("**Protocol.**"), "fingerprint": text.find("**Fingerprint.**"),
                 "allowed": text.find("**Allowed major.**"), "older": text.find("**Older major.**")}
        cases = [
            ("protocol", "fingerprint", hello("1.1.0", site=site, protocols=(99,), fp=secrets.token_hex(32)),
             {"protocol": (200, "protocolUnsupported"), "fingerprint": (409, "schema_conflict")}),
            ("protocol", "allowed", hello("3.0.0", site=site, protocols=(99,)),
             {"protocol": (200, "protocolUnsupported"), "allowed": (409, "major_not_allowed")}),
            ("protocol", "older", hello("1.1.0", site=site, protocols=(99,), fp=old_fingerprint),
             {"protocol": (200, "protocolUnsupported"), "older": (200, "upgradeRequired")}),
            ("fingerprint", "older", hello("1.1.0", site=site, fp=secrets.token_hex(32)),
             {"fingerprint": (409, "schema_conflict"), "older": (200, "upgradeRequired")}),
        ]
        for first, second, message, outcomes in cases:
            if rules[first] < 0 or rules[second] < 0:
                self.check("hello-order.%s-%s" % (first, second), False, "section 11.1 no longer names both rules")
                continue
            winner = min((first, second), key=lambda rule: rules[rule])
            loser = second if winner == first else first
            status, outcome = outcomes[winner]
            answer = dataset.post("hello", message)
            name = "hello-order.%s-before-%s" % (winner, loser)
            if status == 200:
                self.check(name, answer.status == 200 and answer.json().get("verdict") == outcome,
                           "expected verdict %s, got %s" % (outcome, answer.describe()))
            else:
                self.expect(name, answer, status, outcome)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True, help="the server's base URL, http://HOST:PORT")
    parser.add_argument("--admin", required=True,
                        help="command prefix that makes datasets and tokens (the `ostore-server` interface)")
    parser.add_argument("--limited-server", help="a server with the limits some requests.json cases name "
                                                 "(maxChangesPerPush 2); without it those cases are not run")
    parser.add_argument("--limited-admin", help="the admin command of --limited-server (default: --admin)")
    parser.add_argument("--vectors", default=os.path.join(PROTOCOL, "vectors"), help="the vectors folder")
    parser.add_argument("--only", action="append", help="run only the checks whose name starts with this")
    parser.add_argument("--skip", action="append", default=[], help="report these checks as not run (prefixes)")
    parser.add_argument("--timeout", type=float, default=30, help="seconds to wait for an answer")
    parser.add_argument("--verbose", action="store_true", help="print passing checks too")
    arguments = parser.parse_args()
    run = Run(arguments)
    if arguments.skip:
        check = run.check

        def skipping(name, condition, detail=""):
            if any(name.startswith(prefix) for prefix in arguments.skip):
                run.skip(name, "--skip")
                return
            check(name, condition, detail)

        run.check = skipping
    sys.exit(run.start())


if __name__ == "__main__":
    main()
