package cli

import (
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/buildinfo"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/trust"
)

var camelKey = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// TestJSONOutputKeysAreCamelCase walks every type a command prints under
// -o json, down to the leaves, and fails on a key that is not camelCase
// as Kubernetes spells them: a snake_case tag, or an untagged field that
// encoding/json would print as Capitalised.
func TestJSONOutputKeysAreCamelCase(t *testing.T) {
	outputs := []any{
		output.Validated{}, output.Result{}, output.Tracked{}, output.Failure{}, output.RepoLedger{}, output.Skip{}, output.Change{},
		output.VerifyResult{}, buildinfo.Info{}, reconciler.Diff{}, reconciler.SyncPlan{}, registry.Image{},
		status.App{}, history.Record{}, verdict.Verification{}, release.Hold{}, proofapi.Answer{}, trust.Refusal{},
	}
	for _, v := range outputs {
		t.Run(reflect.TypeOf(v).String(), func(t *testing.T) {
			for _, bad := range badKeys(reflect.TypeOf(v), reflect.TypeOf(v).String(), map[reflect.Type]bool{}) {
				t.Error(bad)
			}
		})
	}
}

var (
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// badKeys lists the keys of t, at path, that are not camelCase. It
// descends into pinbot's own types only: the Kubernetes types it embeds
// follow the convention already.
func badKeys(t reflect.Type, path string, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || !strings.HasPrefix(t.PkgPath(), "pinbot.dev/pinbot") ||
		t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) || t.Implements(textMarshaler) {
		return nil
	}
	seen[t] = true
	var bad []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case name == "" && f.Anonymous:
			bad = append(bad, badKeys(f.Type, path, seen)...)
			continue
		case name == "":
			name = f.Name
		}
		if !camelKey.MatchString(name) {
			bad = append(bad, path+"."+f.Name+": key "+name+" is not camelCase")
		}
		bad = append(bad, badKeys(f.Type, path+"."+name, seen)...)
	}
	return bad
}
