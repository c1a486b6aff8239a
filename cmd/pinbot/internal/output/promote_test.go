package output

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"pinbot.dev/pinbot/promote"
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
