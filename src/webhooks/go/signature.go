// Package webhooks verifies the Service-Signature header of the messaging
// service's webhook deliveries (spec §Webhook signature 2-5). It needs only
// the standard library; copy this file into a receiver or import the module.
//
// The header has the form t=<unix seconds>,v1=<hex>. v1 is the lowercase hex
// HMAC-SHA256, keyed with the endpoint's signing secret (whsec_…), of
// "<t>.<raw body>". A receiver refuses a delivery whose t is not a finite
// number or is more than 300 seconds from its clock either way, and compares
// signatures in constant time after checking equal length. Several v1 values
// may be present (any may match); unknown elements are ignored.
//
// It behaves as the Node verifier (src/webhooks/signature.js) and the Python
// one (src/webhooks/python/webhook_signature.py); all three are checked
// against test/webhook-signature-vectors.json.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is the largest accepted difference between t and the
// receiver's clock (spec §Limits: 300 seconds).
const DefaultTolerance = 300 * time.Second

// Reason says which rule a refused delivery broke.
type Reason string

// The reasons Verify reports, as the Node and Python verifiers name them.
const (
	MissingHeader           Reason = "missing_header"
	MalformedHeader         Reason = "malformed_header"
	MissingTimestamp        Reason = "missing_timestamp"
	TimestampNotFinite      Reason = "timestamp_not_finite"
	TimestampOutOfTolerance Reason = "timestamp_out_of_tolerance"
	MissingSignature        Reason = "missing_signature"
	SignatureMismatch       Reason = "signature_mismatch"
)

// SignatureError is the error of a refused delivery.
type SignatureError struct {
	Reason  Reason
	Message string
}

func (e *SignatureError) Error() string { return string(e.Reason) + ": " + e.Message }

var numeric = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// Verify checks a delivery against the current time with DefaultTolerance.
// rawBody is the exact request body, read before any JSON parsing; header
// is the Service-Signature header; secret is the endpoint's signing secret.
// It returns nil when the delivery is authentic, else a *SignatureError.
func Verify(rawBody []byte, header, secret string) error {
	return VerifyAt(rawBody, header, secret, time.Now(), DefaultTolerance)
}

// VerifyAt is Verify with the receiver's clock reading now and the given
// tolerance (t may differ from now by at most tolerance, either way).
func VerifyAt(rawBody []byte, header, secret string, now time.Time, tolerance time.Duration) error {
	if strings.TrimSpace(header) == "" {
		return &SignatureError{MissingHeader, "no Service-Signature header"}
	}
	var timestamp *string
	var signatures []string
	for _, part := range strings.Split(header, ",") {
		eq := strings.Index(part, "=")
		if eq <= 0 {
			return &SignatureError{MalformedHeader, fmt.Sprintf("malformed Service-Signature element %q", part)}
		}
		key, value := strings.TrimSpace(part[:eq]), strings.TrimSpace(part[eq+1:])
		switch key {
		case "t":
			timestamp = &value
		case "v1":
			signatures = append(signatures, value)
		}
	}
	if timestamp == nil {
		return &SignatureError{MissingTimestamp, "Service-Signature has no t"}
	}
	t := math.NaN()
	if numeric.MatchString(*timestamp) {
		t, _ = strconv.ParseFloat(*timestamp, 64) // ±Inf when out of range
	}
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return &SignatureError{TimestampNotFinite, fmt.Sprintf("Service-Signature t is not a finite number: %q", *timestamp)}
	}
	nowSeconds := float64(now.Unix())
	if math.Abs(nowSeconds-t) > tolerance.Seconds() {
		return &SignatureError{TimestampOutOfTolerance, fmt.Sprintf("Service-Signature t is more than %v from now", tolerance)}
	}
	if len(signatures) == 0 {
		return &SignatureError{MissingSignature, "Service-Signature has no v1"}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(*timestamp + "."))
	mac.Write(rawBody)
	expected := []byte(hex.EncodeToString(mac.Sum(nil)))
	for _, candidate := range signatures {
		given := []byte(candidate)
		if len(given) == len(expected) && subtle.ConstantTimeCompare(given, expected) == 1 {
			return nil
		}
	}
	return &SignatureError{SignatureMismatch, "no v1 signature matches the payload and secret"}
}
