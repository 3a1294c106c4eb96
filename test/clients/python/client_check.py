"""Calls the messaging service from Python and reports what it read, for the
client checks of test/clients.test.ts.

    python client_check.py grpc < plan.json   # gRPC, with the code generated into gen/python
    python client_check.py rest < plan.json   # REST/JSON at /v1, plain HTTP (urllib)

Standard input: a plan, {"target": "host:port" (grpc) or "http://host:port"
(rest), "steps": [{"id": "...", "call": "get_me", "key": "sk_...", "request":
{...}}]}; request is the operation's request (protobuf JSON for gRPC; query
parameters or body for REST), optional. Standard output: one JSON line per
step: {"id", "call", "ok", "headers" (lower-case names), and "response" (gRPC:
the fields read from the typed response, by their proto names; REST: the JSON
body) or "error" (gRPC: status code number, message and the google.rpc.ErrorInfo
reason, domain and metadata; REST: the body's "error" object), and for REST
"status"}. To check another operation, add it to both CALLS tables.
"""

import json
import sys
import urllib.error
import urllib.parse
import urllib.request

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from messaging.v1 import account_pb2, account_pb2_grpc

TIMEOUT_SECONDS = 20


def read_me(res):
    return {
        "account_id": res.account_id,
        "key": {"id": res.key.id, "name": res.key.name, "scopes": list(res.key.scopes)},
        "rate_limit_per_min": res.rate_limit_per_min,
    }


# call -> (stub class, method name, request type, reader of the response)
GRPC_CALLS = {
    "get_me": (account_pb2_grpc.AccountServiceStub, "GetMe", account_pb2.GetMeRequest, read_me),
}

# call -> (HTTP method, path)
REST_CALLS = {
    "get_me": ("GET", "/v1/me"),
}


def text_headers(*metadata):
    out = {}
    for md in metadata:
        for name, value in md or ():
            if not name.endswith("-bin"):
                out.setdefault(name.lower(), value)
    return out


def run_grpc(channel, step):
    stub_class, method, request_type, read = GRPC_CALLS[step["call"]]
    rpc = getattr(stub_class(channel), method)
    request = json_format.ParseDict(step.get("request") or {}, request_type())
    metadata = [("authorization", f"Bearer {step['key']}")]
    report = {"id": step["id"], "call": step["call"]}
    try:
        response, call = rpc.with_call(request, metadata=metadata, timeout=TIMEOUT_SECONDS)
    except grpc.RpcError as err:
        error = {"code": err.code().value[0], "message": err.details()}
        status = rpc_status.from_call(err)
        for detail in status.details if status else ():
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                error.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
        report.update(ok=False, error=error, headers=text_headers(err.initial_metadata(), err.trailing_metadata()))
        return report
    report.update(ok=True, response=read(response), headers=text_headers(call.initial_metadata(), call.trailing_metadata()))
    return report


def run_rest(base_url, step):
    http_method, path = REST_CALLS[step["call"]]
    request = step.get("request") or {}
    headers = {"authorization": f"Bearer {step['key']}", "accept": "application/json"}
    data = None
    if http_method == "GET":
        if request:
            path += "?" + urllib.parse.urlencode(request, doseq=True)
    else:
        data = json.dumps(request).encode("utf-8")
        headers["content-type"] = "application/json"
    req = urllib.request.Request(base_url + path, data=data, method=http_method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as res:
            status, body, response_headers = res.status, res.read(), res.headers
    except urllib.error.HTTPError as err:
        status, body, response_headers = err.code, err.read(), err.headers
    parsed = json.loads(body)
    report = {
        "id": step["id"],
        "call": step["call"],
        "ok": 200 <= status < 300,
        "status": status,
        "headers": {name.lower(): value for name, value in response_headers.items()},
    }
    if report["ok"]:
        report["response"] = parsed
    else:
        report["error"] = parsed["error"]
    return report


def main():
    transport = sys.argv[1] if len(sys.argv) > 1 else ""
    if transport not in ("grpc", "rest"):
        sys.exit("usage: client_check.py grpc|rest < plan.json")
    plan = json.load(sys.stdin)
    channel = grpc.insecure_channel(plan["target"]) if transport == "grpc" else None
    try:
        for step in plan["steps"]:
            report = run_grpc(channel, step) if channel else run_rest(plan["target"], step)
            print(json.dumps(report), flush=True)
    finally:
        if channel:
            channel.close()


if __name__ == "__main__":
    main()
