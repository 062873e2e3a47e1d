"""A loopback OTLP/HTTP trace receiver, and spans as rows of the contrib clickhouse exporter's
`otel_traces` table, loaded into chdb (ClickHouse in-process)."""

import gzip
import http.server
import json
import os
import subprocess
import threading
import zlib

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

STATUS = {0: "Unset", 1: "Ok", 2: "Error"}
# traceutil.SpanKindStr of the collector
KIND = {0: "Unspecified", 1: "Internal", 2: "Server", 3: "Client", 4: "Producer", 5: "Consumer"}

DDL = """
CREATE TABLE IF NOT EXISTS cmstore.otel_traces (
    Timestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1))
) ENGINE = MergeTree
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
"""


class Receiver:
    """POST /v1/traces (protobuf, optionally gzip/deflate): 200 with an empty response; keeps
    every request and span."""

    def __init__(self):
        self.requests = []
        self.spans = []  # (resource_attrs, scope, span)
        self.errors = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                enc = (self.headers.get("Content-Encoding") or "").lower()
                try:
                    if self.path != "/v1/traces":
                        raise ValueError(f"path {self.path}")
                    if enc == "gzip":
                        body = gzip.decompress(body)
                    elif enc == "deflate":
                        body = zlib.decompress(body)
                    req = trace_service_pb2.ExportTraceServiceRequest()
                    req.ParseFromString(body)
                except Exception as e:  # noqa: BLE001
                    outer.errors.append(repr(e))
                    self.send_response(400)
                    self.end_headers()
                    return
                outer.requests.append(req)
                for rs in req.resource_spans:
                    rattrs = {kv.key: _any(kv.value) for kv in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for sp in ss.spans:
                            outer.spans.append((rattrs, ss.scope, sp))
                out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.server.shutdown()
        self.server.server_close()


def _any(v):
    """An AnyValue as the clickhouse exporter's Map(String,String) value (AsString)."""
    k = v.WhichOneof("value")
    if k is None:
        return ""
    if k == "string_value":
        return v.string_value
    if k == "int_value":
        return str(v.int_value)
    if k == "bool_value":
        return "true" if v.bool_value else "false"
    if k == "double_value":
        return repr(v.double_value)
    if k == "bytes_value":
        import base64
        return base64.b64encode(v.bytes_value).decode()
    if k == "array_value":
        return json.dumps([_any(x) for x in v.array_value.values])
    if k == "kvlist_value":
        return json.dumps({x.key: _any(x.value) for x in v.kvlist_value.values})
    return ""


def row(rattrs, scope, sp):
    start, end = sp.start_time_unix_nano, sp.end_time_unix_nano
    return {
        "Timestamp": start,  # ns since epoch
        "TraceId": sp.trace_id.hex(),
        "SpanId": sp.span_id.hex(),
        "ParentSpanId": sp.parent_span_id.hex(),
        "TraceState": sp.trace_state,
        "SpanName": sp.name,
        "SpanKind": KIND.get(sp.kind, "Unspecified"),
        "ServiceName": rattrs.get("service.name", ""),
        "ResourceAttributes": rattrs,
        "ScopeName": scope.name,
        "ScopeVersion": scope.version,
        "SpanAttributes": {kv.key: _any(kv.value) for kv in sp.attributes},
        "Duration": max(0, end - start),
        "StatusCode": STATUS.get(sp.status.code, "Unset"),
        "StatusMessage": sp.status.message,
    }


def export(cmstore, env, port, extra=()):
    return subprocess.run([cmstore, "export", "otlp", "--endpoint", f"http://127.0.0.1:{port}",
                           "--content", *extra], env=env, capture_output=True, text=True)


def load(sess, rows, tmpdir):
    """Rows into cmstore.otel_traces of the chdb session."""
    path = os.path.join(tmpdir, "otel_traces.jsonl")
    with open(path, "w") as f:
        for r in rows:
            r = dict(r)
            # DateTime64(9) from a decimal seconds string keeps the nanoseconds
            r["Timestamp"] = f"{r['Timestamp'] // 10**9}.{r['Timestamp'] % 10**9:09d}"
            f.write(json.dumps(r) + "\n")
    sess.query("CREATE DATABASE IF NOT EXISTS cmstore")
    sess.query("DROP TABLE IF EXISTS cmstore.otel_traces")
    sess.query(DDL)
    sess.query(f"INSERT INTO cmstore.otel_traces SELECT * FROM file('{path}', 'JSONEachRow')"
               " SETTINGS date_time_input_format='best_effort'")
    return path
