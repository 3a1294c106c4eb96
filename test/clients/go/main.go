// Command clientcheck calls the messaging service over gRPC with the Go code
// generated from the protos (gen/go) and reports what it read, for the
// client checks of test/clients.test.ts.
//
// Standard input: a plan, {"target": "host:port", "steps": [{"id": "...",
// "call": "get_me", "key": "sk_...", "request": {...}}]}; request is the
// RPC's request in protobuf JSON (proto field names), optional.
// Standard output: one JSON line per step, {"id", "call", "ok", "response"
// (the fields read from the typed response, by their proto names) or "error"
// (gRPC status code number, message, and the google.rpc.ErrorInfo reason,
// domain and metadata), "headers" (response headers and trailers, lower-case names)}.
// It exits 1 only when it cannot run the plan at all.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	messagingv1 "messaging-service/gen/go/messaging/v1"
)

type step struct {
	ID      string          `json:"id"`
	Call    string          `json:"call"`
	Key     string          `json:"key"`
	Request json.RawMessage `json:"request"`
}

type plan struct {
	Target string `json:"target"`
	Steps  []step `json:"steps"`
}

type callFunc func(ctx context.Context, conn *grpc.ClientConn, request json.RawMessage, opts ...grpc.CallOption) (any, error)

// calls maps a step's call to the RPC it makes and the fields it reads back.
// To check another operation, add an entry here and a step in the test.
var calls = map[string]callFunc{
	"get_me": func(ctx context.Context, conn *grpc.ClientConn, request json.RawMessage, opts ...grpc.CallOption) (any, error) {
		in := &messagingv1.GetMeRequest{}
		if err := readRequest(request, in); err != nil {
			return nil, err
		}
		res, err := messagingv1.NewAccountServiceClient(conn).GetMe(ctx, in, opts...)
		if err != nil {
			return nil, err
		}
		return map[string]any{
			"account_id": res.GetAccountId(),
			"key": map[string]any{
				"id":     res.GetKey().GetId(),
				"name":   res.GetKey().GetName(),
				"scopes": res.GetKey().GetScopes(),
			},
			"rate_limit_per_min": res.GetRateLimitPerMin(),
		}, nil
	},
}

func readRequest(raw json.RawMessage, into proto.Message) error {
	if len(raw) == 0 {
		return nil
	}
	return protojson.Unmarshal(raw, into)
}

func errorReport(err error) map[string]any {
	st := status.Convert(err)
	report := map[string]any{"code": int(st.Code()), "message": st.Message()}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			md := info.GetMetadata()
			if md == nil {
				md = map[string]string{}
			}
			report["reason"] = info.GetReason()
			report["domain"] = info.GetDomain()
			report["metadata"] = md
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
	for _, s := range p.Steps {
		call, ok := calls[s.Call]
		if !ok {
			return fmt.Errorf("unknown call %q", s.Call)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+s.Key)
		var header, trailer metadata.MD
		response, err := call(ctx, conn, s.Request, grpc.Header(&header), grpc.Trailer(&trailer))
		cancel()
		report := map[string]any{"id": s.ID, "call": s.Call, "ok": err == nil, "headers": headerReport(header, trailer)}
		if err != nil {
			report["error"] = errorReport(err)
		} else {
			report["response"] = response
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
