package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust"
)

// TestPromoteJSONIsOneDocument: several targets print one array, one
// target its object, so `-o json > promotion.json` is always JSON.
func TestPromoteJSONIsOneDocument(t *testing.T) {
	one := promote.Result{Branch: "pinbot/prod", Target: "prod", Status: promote.StatusOpened}
	two := promote.Result{Branch: "pinbot/staging", Target: "staging", Status: promote.StatusOpened}
	for _, tc := range []struct {
		name    string
		results []promote.Result
		want    any
	}{
		{"one target", []promote.Result{one}, map[string]any{}},
		{"two targets", []promote.Result{one, two}, []any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PromoteJSON(&buf, tc.results, false); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(&buf)
			got := reflect.New(reflect.TypeOf(tc.want)).Interface()
			if err := dec.Decode(got); err != nil {
				t.Fatalf("output is not one %T: %v\n%s", tc.want, err, buf.String())
			}
			if dec.More() {
				t.Errorf("output holds more than one JSON document")
			}
			if list, ok := got.(*[]any); ok && len(*list) != 2 {
				t.Errorf("array of %d results, want 2", len(*list))
			}
		})
	}
}

// TestDriftJSONStructuresRefusals: a drift failure that is a signature
// refusal or a release-chain refusal carries it as data, as promote -o
// json's error does, besides the message.
func TestDriftJSONStructuresRefusals(t *testing.T) {
	refusal := &trust.Refusal{Image: "r.example/web", Digest: "sha256:" + strings.Repeat("a", 64), Rule: "signatures[0]", Reason: "no signature by keys/cosign.pub"}
	gate := &release.Refusal{Rule: release.RuleHeld, Env: "prod", Image: "r.example/api", Digest: "sha256:" + strings.Repeat("b", 64), Detail: "failed to prove"}
	rep := promote.DriftReport{Checked: 2, Failed: []promote.Failure{
		{Image: "r.example/web", Tag: "main", Err: fmt.Errorf("not proposing: %w", refusal)},
		{Image: "r.example/api", Tag: "main", Err: fmt.Errorf("not proposing into prod: %w", gate)},
		{Branch: "pinbot/x", Err: errors.New("publishing pinbot/x: push rejected")},
	}}
	var buf bytes.Buffer
	if err := Drift(&buf, true, false, rep); err != nil {
		t.Fatal(err)
	}
	var got struct{ Failed []Failure }
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Failed) != 3 || got.Failed[0].Refused == nil || *got.Failed[0].Refused != *refusal || got.Failed[0].Gate != nil ||
		got.Failed[1].Gate == nil || got.Failed[1].Gate.Rule != release.RuleHeld || got.Failed[1].Gate.Env != "prod" ||
		got.Failed[2].Refused != nil || got.Failed[2].Gate != nil {
		t.Errorf("failed = %s", buf.String())
	}
}
