package deployer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Meta is the type and object metadata pinbot reads of a deployer's
// object.
type Meta struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
}

// ObjectMeta is the part of metadata pinbot reads.
type ObjectMeta struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Generation int64  `json:"generation"`
}

// Name reads "Application argocd/guestbook", for messages.
func (m Meta) Name() string {
	kind := m.Kind
	if kind == "" {
		kind = "object"
	}
	switch {
	case m.Metadata.Name == "":
		return kind + " (unnamed)"
	case m.Metadata.Namespace == "":
		return kind + " " + m.Metadata.Name
	}
	return kind + " " + m.Metadata.Namespace + "/" + m.Metadata.Name
}

// DecodeError says which object and field could not be read.
type DecodeError struct {
	// Object names the object ("Application argocd/guestbook").
	Object string
	// Field is the dotted path of the field ("spec.source.path"), or ""
	// when the object as a whole is at fault.
	Field string
	// Err is the cause.
	Err error
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("decoding %s: %s", e.Object, e.Err)
	}
	return fmt.Sprintf("decoding %s: field %s: %s", e.Object, e.Field, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// FieldError says which field of a deployer's object pinbot cannot
// follow, and why: a source it cannot render, a malformed revision.
type FieldError struct {
	// Object names the object ("Application argocd/guestbook"), or is ""
	// for a key of pinbot's own config (see Validate).
	Object string
	// Field is the dotted path of the field ("spec.source.chart"), or the
	// config key ("repo").
	Field string
	// Reason says what is wrong.
	Reason string
}

func (e *FieldError) Error() string {
	if e.Object == "" {
		return e.Field + ": " + e.Reason
	}
	return e.Object + ": " + e.Field + ": " + e.Reason
}

// decode reads data into out, an object of the given group and kind, after
// checking its apiVersion and kind. A type mismatch names the field.
func decode(data []byte, group, kind string, meta *Meta, out any) error {
	if err := json.Unmarshal(data, meta); err != nil {
		// The metadata itself is malformed: name what can be named.
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      any `json:"name"`
				Namespace any `json:"namespace"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(data, &m)
		obj := kind
		if s, ok := m.Metadata.Name.(string); ok {
			obj += " " + s
		}
		return decodeError(obj, err)
	}
	obj := meta.Name()
	gotGroup := "" // a bare "v1" is the core group
	if g, _, ok := strings.Cut(meta.APIVersion, "/"); ok {
		gotGroup = g
	}
	if meta.Kind != kind || gotGroup != group {
		return &DecodeError{Object: obj, Err: fmt.Errorf("want kind %s of group %s, got apiVersion %q kind %q", kind, group, meta.APIVersion, meta.Kind)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return decodeError(obj, err)
	}
	return nil
}

// decodeError names the field of a JSON type mismatch.
func decodeError(obj string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &DecodeError{Object: obj, Field: te.Field, Err: fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DecodeError{Object: obj, Err: fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)}
	}
	return &DecodeError{Object: obj, Err: err}
}

// fromUnstructured is decode for an object the API server returned.
func fromUnstructured(u *unstructured.Unstructured, group, kind string, meta *Meta, out any) error {
	if u == nil {
		return &DecodeError{Object: kind, Err: errors.New("no object")}
	}
	data, err := u.MarshalJSON()
	if err != nil {
		obj := Meta{Kind: u.GetKind(), Metadata: ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}}.Name()
		return &DecodeError{Object: obj, Err: fmt.Errorf("encoding to JSON: %w", err)}
	}
	return decode(data, group, kind, meta, out)
}
