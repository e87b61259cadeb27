"""A test OTLP receiver: decodes what Airlock's exporters really send and writes it down.

Modes:
  http   OTLP/HTTP: POST /v1/traces and /v1/metrics, protobuf bodies decoded with the
         `opentelemetry-proto` package (as a collector would), answered as the spec says.
  grpc   OTLP/gRPC: the TraceService and MetricsService of the same package, served by grpcio.
  hang   Accepts connections and never answers nor reads: a collector that hangs.
  reset  Accepts connections and resets them at once: a peer that goes away mid-conversation.

Each received span, metric or connection is one JSON line in --out, written as it arrives:
  {"signal": "span", "service": ..., "name": ..., "trace_id": hex, "span_id": hex,
   "parent_span_id": hex or "", "attributes": {...}}
  {"signal": "metric", "service": ..., "name": ..., "points": n}
  {"signal": "connection"}
  {"signal": "error", "detail": ...}   (a body that did not decode)
The port it listens on (127.0.0.1, chosen by the system) is written to --port-file once ready.
"""

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

_lock = threading.Lock()
_out = None


def record(item):
    with _lock:
        _out.write(json.dumps(item) + "\n")
        _out.flush()


def _service_name(resource):
    for attribute in resource.attributes:
        if attribute.key == "service.name":
            return attribute.value.string_value
    return ""


def _value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def record_traces(request):
    for resource_spans in request.resource_spans:
        service = _service_name(resource_spans.resource)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                record(
                    {
                        "signal": "span",
                        "service": service,
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                    }
                )


def record_metrics(request):
    for resource_metrics in request.resource_metrics:
        service = _service_name(resource_metrics.resource)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                data = metric.WhichOneof("data")
                points = len(getattr(metric, data).data_points) if data else 0
                record({"signal": "metric", "service": service, "name": metric.name, "points": points})


class HttpHandler(BaseHTTPRequestHandler):
    # HTTP/1.0 (the default): the server closes each connection after its response, so a
    # client that keeps connections pooled meets closed sockets, as with many real proxies.
    routes = {
        "/v1/traces": (
            trace_service_pb2.ExportTraceServiceRequest,
            trace_service_pb2.ExportTraceServiceResponse,
            record_traces,
        ),
        "/v1/metrics": (
            metrics_service_pb2.ExportMetricsServiceRequest,
            metrics_service_pb2.ExportMetricsServiceResponse,
            record_metrics,
        ),
    }

    def do_POST(self):
        route = self.routes.get(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if route is None:
            self.send_error(404)
            return
        request_type, response_type, handle = route
        try:
            request = request_type.FromString(body)
        except Exception as error:  # a body that is not the protobuf it claims to be
            record({"signal": "error", "detail": f"{self.path}: {error}"})
            self.send_error(400)
            return
        handle(request)
        reply = response_type().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        record_traces(request)
        return trace_service_pb2.ExportTraceServiceResponse()


class MetricsService(metrics_service_pb2_grpc.MetricsServiceServicer):
    def Export(self, request, context):
        record_metrics(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


def serve_http():
    server = ThreadingHTTPServer(("127.0.0.1", 0), HttpHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def serve_grpc():
    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(MetricsService(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    serve_grpc.server = server  # kept alive
    return port


def serve_raw(reset):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    held = []

    def accept():
        while True:
            connection, _ = listener.accept()
            record({"signal": "connection"})
            if reset:
                # Linger 0: close sends a reset, so the peer's next write fails with EPIPE.
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                connection.close()
            else:
                held.append(connection)  # never read, never answered, never closed

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def main():
    global _out
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["http", "grpc", "hang", "reset"], required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    _out = open(args.out, "a", encoding="utf-8")
    port = {
        "http": serve_http,
        "grpc": serve_grpc,
        "hang": lambda: serve_raw(reset=False),
        "reset": lambda: serve_raw(reset=True),
    }[args.mode]()
    temporary = args.port_file + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(str(port))
    os.replace(temporary, args.port_file)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
