package jsonkeys

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type pod struct {
	Name      string `json:"name"`
	GitDigest string `json:"gitDigest"`
}

type base struct {
	ObservedAt time.Time `json:"observedAt"`
}

type record struct {
	base
	PRURL    string            `json:"prURL,omitempty"`
	ClosedPR int64             `json:"closedPRNumber,omitempty"`
	Pods     []pod             `json:"pods"`
	ByEnv    map[string]*pod   `json:"byEnv"`
	Labels   map[string]string `json:"labels"`
	Raw      json.RawMessage   `json:"rawBlock,omitempty"`
	Untagged string
}

func TestUnmarshalReadsLegacyKeys(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want record
	}{{
		name: "snake_case, as written before",
		in: `{"observed_at":"2026-12-03T12:00:00Z","pr_url":"u","closed_pr_number":7,
			"pods":[{"name":"a","git_digest":"sha256:1"}],
			"by_env":{"prod":{"git_digest":"sha256:2"}},
			"labels":{"team_name":"x"},"raw_block":{"old_key":1},"Untagged":"y"}`,
		want: record{base: base{ObservedAt: at}, PRURL: "u", ClosedPR: 7,
			Pods:  []pod{{Name: "a", GitDigest: "sha256:1"}},
			ByEnv: map[string]*pod{"prod": {GitDigest: "sha256:2"}},
			// Map keys are data, and a raw block is kept as it was.
			Labels: map[string]string{"team_name": "x"}, Raw: json.RawMessage(`{"old_key":1}`),
			Untagged: "y"},
	}, {
		name: "camelCase wins over snake_case",
		in:   `{"prURL":"new","pr_url":"old","pods":[{"gitDigest":"sha256:n","git_digest":"sha256:o"}]}`,
		want: record{PRURL: "new", Pods: []pod{{GitDigest: "sha256:n"}}},
	}, {
		name: "large numbers stay exact",
		in:   `{"closed_pr_number":9007199254740993}`,
		want: record{ClosedPR: 9007199254740993},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got record
			if err := Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(record{})); diff != "" {
				t.Errorf("Unmarshal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalErrorsAsJSONDoes(t *testing.T) {
	var got record
	err := Unmarshal([]byte(`{"pods": [`), &got)
	want := json.Unmarshal([]byte(`{"pods": [`), &got)
	if err == nil || err.Error() != want.Error() {
		t.Errorf("Unmarshal error = %v, want %v", err, want)
	}
	err = Unmarshal([]byte(`{"closed_pr_number":"seven"}`), &got)
	if err == nil {
		t.Error("a string for a number decoded without error")
	}
}

func TestSnake(t *testing.T) {
	for camel, want := range map[string]string{
		"gitDigest": "git_digest", "prURL": "pr_url", "closedPRNumber": "closed_pr_number",
		"lastProvenAt": "last_proven_at", "name": "name", "sha256Sum": "sha256_sum",
	} {
		if got := snake(camel); got != want {
			t.Errorf("snake(%q) = %q, want %q", camel, got, want)
		}
	}
}
