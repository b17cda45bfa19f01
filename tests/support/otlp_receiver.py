"""A real OTLP/HTTP metrics receiver for the tests: every POST to
/v1/metrics is decoded with the opentelemetry-proto package (PyPI, the
OpenTelemetry project's own generated protobuf classes) and written as one
JSON line: the resource attributes and every data point (metric name,
kind, attributes, value, time). It listens on 127.0.0.1 only (inside the
test's own network namespace) and prints its port first.

Usage: otlp_receiver.py OUT.jsonl [PORT]    (or: otlp_receiver.py --decode FILE)
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def flatten(body):
    req = metrics_service_pb2.ExportMetricsServiceRequest()
    req.ParseFromString(body)
    out = {"resources": [], "series": []}
    for rm in req.resource_metrics:
        out["resources"].append(
            {a.key: value_of(a.value) for a in rm.resource.attributes}
        )
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                points = getattr(m, kind).data_points
                for p in points:
                    which = p.WhichOneof("value")
                    out["series"].append(
                        {
                            "name": m.name,
                            "kind": kind,
                            "monotonic": kind == "sum" and m.sum.is_monotonic,
                            "attributes": {
                                a.key: value_of(a.value) for a in p.attributes
                            },
                            "value": float(getattr(p, which)),
                            "time_unix_nano": p.time_unix_nano,
                        }
                    )
    return out


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path != "/v1/metrics" or self.headers.get(
            "Content-Type"
        ) != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            return
        try:
            line = json.dumps(flatten(body))
        except Exception as e:  # a request that does not decode is a 400
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(e).encode())
            return
        with open(self.server.out, "a") as f:
            f.write(line + "\n")
        answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    if sys.argv[1] == "--decode":
        with open(sys.argv[2], "rb") as f:
            print(json.dumps(flatten(f.read())))
        return
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    server = HTTPServer(("127.0.0.1", port), Handler)
    server.out = sys.argv[1]
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
