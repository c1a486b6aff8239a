package ssa

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/object"
)

// Names pinbot writes on every object it applies.
const (
	// LabelApp is the inventory label: the name of the app that applied the
	// object. Prune deletes only objects carrying it.
	LabelApp = "pinbot.dev/app"
	// AnnotationHash holds a hash of the object as rendered from Git, so a
	// pass can tell that Git moved without a dry run per object.
	AnnotationHash = "pinbot.dev/config-hash"
	// FieldManager is the server-side apply field manager.
	FieldManager = "pinbot"
)

// ObjectRef names one Kubernetes object.
type ObjectRef = object.Ref

// RefOf returns the reference of u.
func RefOf(u *unstructured.Unstructured) ObjectRef { return object.RefOf(u) }

// ConfigHash is the hex sha256 of u's JSON without the inventory metadata
// pinbot adds. JSON object keys are sorted, so the hash is stable.
func ConfigHash(u *unstructured.Unstructured) (string, error) {
	c := u.DeepCopy()
	labels := c.GetLabels()
	delete(labels, LabelApp)
	c.SetLabels(labels)
	ann := c.GetAnnotations()
	delete(ann, AnnotationHash)
	c.SetAnnotations(ann)
	b, err := json.Marshal(c.Object)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", RefOf(u), err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// Stamp returns a copy of u carrying the inventory label for app and the
// config hash annotation: what the Applier sends.
func Stamp(u *unstructured.Unstructured, app string) (*unstructured.Unstructured, error) {
	h, err := ConfigHash(u)
	if err != nil {
		return nil, err
	}
	c := u.DeepCopy()
	labels := c.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelApp] = app
	c.SetLabels(labels)
	ann := c.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationHash] = h
	c.SetAnnotations(ann)
	return c, nil
}

// IsCRD reports whether o is a CustomResourceDefinition.
func IsCRD(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// IsNamespace reports whether o is a Namespace.
func IsNamespace(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Namespace"
}
