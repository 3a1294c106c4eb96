// Command clientcheck calls the messaging service over gRPC with the Go code
// generated from the protos (gen/go) and reports what it read, for the
// client checks of test/clients.test.ts.
//
// Standard input: a plan, {"target": "host:port", "steps": [step...]}, each
// step {"id", "call" (get_me, list_templates, send_message, get_message),
// "key": "sk_...", "request": {...} (the RPC's request in protobuf JSON,
// proto field names; optional), "idempotency_key" (sent as Idempotency-Key
// metadata; optional), "with": {"field": "step.field"} (sets a request field
// to a field of an earlier step's response; optional), "until": {"field":
// value} (repeats the call every 200 ms, for at most 20 s, until the
// response has those values; optional)}.
// Standard output: one JSON line per step, {"id", "call", "ok", "response"
// (the fields read from the typed response, by their proto names: enums by
// name, timestamps as ISO 8601 UTC with milliseconds, unset optional and
// message fields as null) or "error" (gRPC status code number, message, the
// google.rpc.ErrorInfo reason, domain and metadata, and the
// google.rpc.BadRequest field violations), "headers" (response headers and
// trailers, lower-case names), "attempts" (calls made)}.
// It exits 1 only when it cannot run the plan at all.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	messagingv1 "messaging-service/gen/go/messaging/v1"
)

const (
	pollInterval = 200 * time.Millisecond
	pollTimeout  = 20 * time.Second
)

type step struct {
	ID             string            `json:"id"`
	Call           string            `json:"call"`
	Key            string            `json:"key"`
	Request        json.RawMessage   `json:"request"`
	IdempotencyKey string            `json:"idempotency_key"`
	With           map[string]string `json:"with"`
	Until          map[string]any    `json:"until"`
}

type plan struct {
	Target string `json:"target"`
	Steps  []step `json:"steps"`
}

type callFunc func(ctx context.Context, conn *grpc.ClientConn, request json.RawMessage, opts ...grpc.CallOption) (map[string]any, error)

// unary makes a callFunc of a generated client constructor and one of its
// methods: it reads the request from protobuf JSON and the response with read.
func unary[C any, Req any, Res any, PReq interface {
	*Req
	proto.Message
}](
	newClient func(grpc.ClientConnInterface) C,
	rpc func(C, context.Context, PReq, ...grpc.CallOption) (Res, error),
	read func(Res) map[string]any,
) callFunc {
	return func(ctx context.Context, conn *grpc.ClientConn, request json.RawMessage, opts ...grpc.CallOption) (map[string]any, error) {
		in := PReq(new(Req))
		if len(request) > 0 {
			if err := protojson.Unmarshal(request, in); err != nil {
				return nil, err
			}
		}
		res, err := rpc(newClient(conn), ctx, in, opts...)
		if err != nil {
			return nil, err
		}
		return read(res), nil
	}
}

// calls maps a step's call to the RPC it makes and the fields it reads back.
// To check another operation, add an entry here and a step in the test.
var calls = map[string]callFunc{
	"get_me":         unary(messagingv1.NewAccountServiceClient, messagingv1.AccountServiceClient.GetMe, readMe),
	"list_templates": unary(messagingv1.NewTemplateServiceClient, messagingv1.TemplateServiceClient.ListTemplates, readTemplates),
	"send_message": unary(messagingv1.NewMessageServiceClient, messagingv1.MessageServiceClient.SendMessage,
		func(res *messagingv1.SendMessageResponse) map[string]any { return readMessage(res.GetMessage()) }),
	"get_message": unary(messagingv1.NewMessageServiceClient, messagingv1.MessageServiceClient.GetMessage,
		func(res *messagingv1.GetMessageResponse) map[string]any { return readMessage(res.GetMessage()) }),
}

func readMe(res *messagingv1.GetMeResponse) map[string]any {
	return map[string]any{
		"account_id": res.GetAccountId(),
		"key": map[string]any{
			"id":     res.GetKey().GetId(),
			"name":   res.GetKey().GetName(),
			"scopes": res.GetKey().GetScopes(),
		},
		"rate_limit_per_min": res.GetRateLimitPerMin(),
	}
}

func readTemplates(res *messagingv1.ListTemplatesResponse) map[string]any {
	data := []any{}
	for _, t := range res.GetData() {
		variables := []any{}
		for _, v := range t.GetVariables() {
			variables = append(variables, map[string]any{"name": v.GetName(), "required": v.GetRequired(), "example": v.GetExample()})
		}
		var flow any
		if t.GetFlow() != nil {
			flow = map[string]any{"flow_id": t.GetFlow().GetFlowId()}
		}
		data = append(data, map[string]any{
			"id":         t.GetId(),
			"object":     t.GetObject(),
			"name":       t.GetName(),
			"language":   t.GetLanguage(),
			"status":     t.GetStatus().String(),
			"body":       t.GetBody(),
			"variables":  variables,
			"flow":       flow,
			"created_at": isoTime(t.GetCreatedAt()),
			"category":   t.GetCategory().String(),
		})
	}
	return map[string]any{"object": res.GetObject(), "data": data, "total": res.GetTotal(), "next_page_token": optional(res.NextPageToken)}
}

func readMessage(m *messagingv1.Message) map[string]any {
	var messageError any
	if m.GetError() != nil {
		messageError = map[string]any{"code": m.GetError().GetCode(), "title": m.GetError().GetTitle()}
	}
	var queuedReason any
	if m.QueuedReason != nil {
		queuedReason = m.GetQueuedReason().String()
	}
	return map[string]any{
		"message_id":        m.GetMessageId(),
		"object":            m.GetObject(),
		"to":                m.GetTo(),
		"sender":            m.GetSender(),
		"template_id":       m.GetTemplateId(),
		"flow_token":        optional(m.FlowToken),
		"status":            m.GetStatus().String(),
		"wa_message_id":     optional(m.WaMessageId),
		"error":             messageError,
		"credits":           m.GetCredits(),
		"created_at":        isoTime(m.GetCreatedAt()),
		"sent_at":           isoTime(m.GetSentAt()),
		"delivered_at":      isoTime(m.GetDeliveredAt()),
		"read_at":           isoTime(m.GetReadAt()),
		"failed_at":         isoTime(m.GetFailedAt()),
		"send_at":           isoTime(m.GetSendAt()),
		"valid_until":       isoTime(m.GetValidUntil()),
		"canceled_at":       isoTime(m.GetCanceledAt()),
		"queued_reason":     queuedReason,
		"estimated_send_at": isoTime(m.GetEstimatedSendAt()),
	}
}

// isoTime writes a timestamp as ISO 8601 UTC with milliseconds, or null when unset.
func isoTime(ts *timestamppb.Timestamp) any {
	if ts == nil {
		return nil
	}
	return ts.AsTime().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func optional(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func errorReport(err error) map[string]any {
	st := status.Convert(err)
	report := map[string]any{"code": int(st.Code()), "message": st.Message()}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			md := d.GetMetadata()
			if md == nil {
				md = map[string]string{}
			}
			report["reason"] = d.GetReason()
			report["domain"] = d.GetDomain()
			report["metadata"] = md
		case *errdetails.BadRequest:
			violations := []any{}
			for _, v := range d.GetFieldViolations() {
				violations = append(violations, map[string]any{"field": v.GetField(), "description": v.GetDescription()})
			}
			report["field_violations"] = violations
		}
	}
	return report
}

func headerReport(mds ...metadata.MD) map[string]string {
	out := map[string]string{}
	for _, md := range mds {
		for name, values := range md {
			if len(values) > 0 {
				out[name] = values[0]
			}
		}
	}
	return out
}

// withEarlier sets the request fields of s.With from the responses of earlier steps.
func withEarlier(s step, responses map[string]map[string]any) (json.RawMessage, error) {
	if len(s.With) == 0 {
		return s.Request, nil
	}
	request := map[string]any{}
	if len(s.Request) > 0 {
		if err := json.Unmarshal(s.Request, &request); err != nil {
			return nil, err
		}
	}
	for field, source := range s.With {
		stepID, sourceField, _ := strings.Cut(source, ".")
		value, ok := responses[stepID][sourceField]
		if !ok {
			return nil, fmt.Errorf("step %s: no %s in the response of step %s", s.ID, sourceField, stepID)
		}
		request[field] = value
	}
	return json.Marshal(request)
}

// reached reports whether response has every value of until.
func reached(response map[string]any, until map[string]any) bool {
	for field, want := range until {
		if !reflect.DeepEqual(response[field], want) {
			return false
		}
	}
	return true
}

func run() error {
	var p plan
	if err := json.NewDecoder(os.Stdin).Decode(&p); err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	conn, err := grpc.NewClient(p.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	out := json.NewEncoder(os.Stdout)
	responses := map[string]map[string]any{}
	for _, s := range p.Steps {
		call, ok := calls[s.Call]
		if !ok {
			return fmt.Errorf("unknown call %q", s.Call)
		}
		request, err := withEarlier(s, responses)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(pollTimeout)
		var report map[string]any
		for attempts := 1; ; attempts++ {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+s.Key)
			if s.IdempotencyKey != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "idempotency-key", s.IdempotencyKey)
			}
			var header, trailer metadata.MD
			response, err := call(ctx, conn, request, grpc.Header(&header), grpc.Trailer(&trailer))
			cancel()
			report = map[string]any{"id": s.ID, "call": s.Call, "ok": err == nil, "headers": headerReport(header, trailer), "attempts": attempts}
			if err != nil {
				report["error"] = errorReport(err)
				break
			}
			report["response"] = response
			responses[s.ID] = response
			if reached(response, s.Until) || time.Now().After(deadline) {
				break
			}
			time.Sleep(pollInterval)
		}
		if err := out.Encode(report); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clientcheck:", err)
		os.Exit(1)
	}
}
