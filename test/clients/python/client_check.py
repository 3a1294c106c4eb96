"""Calls the messaging service from Python and reports what it read, for the
client checks of test/clients.test.ts.

    python client_check.py grpc < plan.json   # gRPC, with the code generated into gen/python/messaging
    python client_check.py rest < plan.json   # REST/JSON at /v1, with the client generated from the
                                              # OpenAPI document into gen/python/messaging_rest

Standard input: a plan, {"target": "host:port" (grpc) or "http://host:port"
(rest), "steps": [step...]}, each step {"id", "call" (get_me, list_templates,
send_message, get_message: the operationIds in snake_case), "key": "sk_...",
"request": {...} (protobuf JSON for gRPC; for REST the path and query
parameters, or the JSON body of a POST; optional), "idempotency_key"
(optional), "with": {"field": "step.field"} (sets a request field to a field of
an earlier step's response; optional), "until": {"field": value} (repeats the
call every 200 ms, for at most 20 s, until the response has those values;
optional)}.

Standard output: one JSON line per step: {"id", "call", "ok", "headers"
(lower-case names), "attempts" (calls made), and "response" or "error".
gRPC: the fields read from the typed response by their proto names (enums by
name, timestamps as ISO 8601 UTC with milliseconds, unset optional and message
fields as null), or the status code number, message, the google.rpc.ErrorInfo
reason, domain and metadata and the google.rpc.BadRequest field violations.
REST: the JSON body, or its "error" object; and "status" (HTTP) and "parsed"
(the class of the generated client's model the answer was parsed into)}.
To check another operation, add it to both CALLS tables.
"""

import functools
import json
import sys
import time
from datetime import timezone

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from messaging.v1 import account_pb2, account_pb2_grpc, messages_pb2, messages_pb2_grpc, templates_pb2, templates_pb2_grpc
from messaging_rest import AuthenticatedClient
from messaging_rest.api.account_service import get_me
from messaging_rest.api.message_service import get_message, send_message
from messaging_rest.api.template_service import list_templates
from messaging_rest.models import SendMessageRequest

TIMEOUT_SECONDS = 20
POLL_INTERVAL_SECONDS = 0.2
POLL_TIMEOUT_SECONDS = 20


def iso_time(message, field):
    """A Timestamp field as ISO 8601 UTC with milliseconds, or None when unset."""
    if not message.HasField(field):
        return None
    moment = getattr(message, field).ToDatetime(tzinfo=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def optional(message, field):
    return getattr(message, field) if message.HasField(field) else None


def read_me(res):
    return {
        "account_id": res.account_id,
        "key": {"id": res.key.id, "name": res.key.name, "scopes": list(res.key.scopes)},
        "rate_limit_per_min": res.rate_limit_per_min,
    }


def read_template(t):
    return {
        "id": t.id,
        "object": t.object,
        "name": t.name,
        "language": t.language,
        "status": templates_pb2.TemplateStatus.Name(t.status),
        "body": t.body,
        "variables": [{"name": v.name, "required": v.required, "example": v.example} for v in t.variables],
        "flow": {"flow_id": t.flow.flow_id} if t.HasField("flow") else None,
        "created_at": iso_time(t, "created_at"),
        "category": templates_pb2.TemplateCategory.Name(t.category),
    }


def read_templates(res):
    return {
        "object": res.object,
        "data": [read_template(t) for t in res.data],
        "total": res.total,
        "next_page_token": optional(res, "next_page_token"),
    }


def read_message(res):
    m = res.message
    return {
        "message_id": m.message_id,
        "object": m.object,
        "to": m.to,
        "sender": m.sender,
        "template_id": m.template_id,
        "flow_token": optional(m, "flow_token"),
        "status": messages_pb2.MessageStatus.Name(m.status),
        "wa_message_id": optional(m, "wa_message_id"),
        "error": {"code": m.error.code, "title": m.error.title} if m.HasField("error") else None,
        "credits": m.credits,
        "created_at": iso_time(m, "created_at"),
        "sent_at": iso_time(m, "sent_at"),
        "delivered_at": iso_time(m, "delivered_at"),
        "read_at": iso_time(m, "read_at"),
        "failed_at": iso_time(m, "failed_at"),
        "send_at": iso_time(m, "send_at"),
        "valid_until": iso_time(m, "valid_until"),
        "canceled_at": iso_time(m, "canceled_at"),
        "queued_reason": messages_pb2.QueuedReason.Name(m.queued_reason) if m.HasField("queued_reason") else None,
        "estimated_send_at": iso_time(m, "estimated_send_at"),
    }


# call -> (stub class, method name, request type, reader of the response)
GRPC_CALLS = {
    "get_me": (account_pb2_grpc.AccountServiceStub, "GetMe", account_pb2.GetMeRequest, read_me),
    "list_templates": (templates_pb2_grpc.TemplateServiceStub, "ListTemplates", templates_pb2.ListTemplatesRequest, read_templates),
    "send_message": (messages_pb2_grpc.MessageServiceStub, "SendMessage", messages_pb2.SendMessageRequest, read_message),
    "get_message": (messages_pb2_grpc.MessageServiceStub, "GetMessage", messages_pb2.GetMessageRequest, read_message),
}

# call -> (module of the generated REST client, model of the JSON body or None when the request
# fields are path and query parameters)
REST_CALLS = {
    "get_me": (get_me, None),
    "list_templates": (list_templates, None),
    "send_message": (send_message, SendMessageRequest),
    "get_message": (get_message, None),
}


def text_headers(*metadata):
    out = {}
    for md in metadata:
        for name, value in md or ():
            if not name.endswith("-bin"):
                out.setdefault(name.lower(), value)
    return out


def grpc_call(channel, step, request):
    stub_class, method, request_type, read = GRPC_CALLS[step["call"]]
    rpc = getattr(stub_class(channel), method)
    metadata = [("authorization", f"Bearer {step['key']}")]
    if step.get("idempotency_key"):
        metadata.append(("idempotency-key", step["idempotency_key"]))
    try:
        response, call = rpc.with_call(json_format.ParseDict(request, request_type()), metadata=metadata, timeout=TIMEOUT_SECONDS)
    except grpc.RpcError as err:
        error = {"code": err.code().value[0], "message": err.details()}
        status = rpc_status.from_call(err)
        for detail in status.details if status else ():
            info = error_details_pb2.ErrorInfo()
            bad_request = error_details_pb2.BadRequest()
            if detail.Unpack(info):
                error.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
            elif detail.Unpack(bad_request):
                error["field_violations"] = [{"field": v.field, "description": v.description} for v in bad_request.field_violations]
        return {"ok": False, "error": error, "headers": text_headers(err.initial_metadata(), err.trailing_metadata())}
    return {"ok": True, "response": read(response), "headers": text_headers(call.initial_metadata(), call.trailing_metadata())}


def rest_call(base_url, step, request):
    module, body_model = REST_CALLS[step["call"]]
    arguments = {"body": body_model.from_dict(request)} if body_model else dict(request)
    if step.get("idempotency_key"):
        arguments["idempotency_key"] = step["idempotency_key"]
    with AuthenticatedClient(base_url=base_url, token=step["key"], timeout=TIMEOUT_SECONDS) as client:
        answer = module.sync_detailed(client=client, **arguments)
    body = json.loads(answer.content)
    report = {
        "status": int(answer.status_code),
        "ok": 200 <= answer.status_code < 300,
        "headers": {name.lower(): value for name, value in answer.headers.items()},
        "parsed": type(answer.parsed).__name__,
    }
    if report["ok"]:
        report["response"] = body
    else:
        report["error"] = body["error"]
    return report


def with_earlier(step, responses):
    """The step's request, with the fields of step["with"] taken from earlier responses."""
    request = dict(step.get("request") or {})
    for field, source in (step.get("with") or {}).items():
        step_id, source_field = source.split(".", 1)
        request[field] = responses[step_id][source_field]
    return request


def run_step(call, step, responses):
    request = with_earlier(step, responses)
    until = step.get("until") or {}
    deadline = time.monotonic() + POLL_TIMEOUT_SECONDS
    attempts = 0
    while True:
        attempts += 1
        report = call(step, request)
        if not report["ok"]:
            break
        responses[step["id"]] = report["response"]
        if all(report["response"].get(k) == v for k, v in until.items()) or time.monotonic() > deadline:
            break
        time.sleep(POLL_INTERVAL_SECONDS)
    return {"id": step["id"], "call": step["call"], "attempts": attempts, **report}


def main():
    transport = sys.argv[1] if len(sys.argv) > 1 else ""
    if transport not in ("grpc", "rest"):
        sys.exit("usage: client_check.py grpc|rest < plan.json")
    plan = json.load(sys.stdin)
    responses = {}
    channel = grpc.insecure_channel(plan["target"]) if transport == "grpc" else None
    call = functools.partial(grpc_call, channel) if channel else functools.partial(rest_call, plan["target"])
    try:
        for step in plan["steps"]:
            print(json.dumps(run_step(call, step, responses)), flush=True)
    finally:
        if channel:
            channel.close()


if __name__ == "__main__":
    main()
