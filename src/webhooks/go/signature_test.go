package webhooks

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type vectorsFile struct {
	ToleranceSeconds int `json:"tolerance_seconds"`
	Vectors          []struct {
		Name   string  `json:"name"`
		Secret string  `json:"secret"`
		Body   string  `json:"body"`
		Header string  `json:"header"`
		Now    int64   `json:"now"`
		Valid  bool    `json:"valid"`
		Reason *string `json:"reason"`
	} `json:"vectors"`
}

// TestVectors checks Verify against the shared vectors that the TypeScript
// signer writes (test/webhook-signature-vectors.json).
func TestVectors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "webhook-signature-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file vectorsFile
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			err := VerifyAt([]byte(v.Body), v.Header, v.Secret, time.Unix(v.Now, 0), time.Duration(file.ToleranceSeconds)*time.Second)
			if v.Valid {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var sigErr *SignatureError
			if !errors.As(err, &sigErr) {
				t.Fatalf("want refusal %s, got %v", *v.Reason, err)
			}
			if string(sigErr.Reason) != *v.Reason {
				t.Fatalf("want reason %s, got %s (%v)", *v.Reason, sigErr.Reason, err)
			}
		})
	}
	t.Logf("checked %d vectors", len(file.Vectors))
}
