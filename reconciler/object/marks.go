package object

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The marks pinbot leaves on every object it applies.
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

// ConfigHash is the hex sha256 of u's JSON without the marks pinbot adds.
// JSON object keys are sorted, so the hash is stable.
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

// AsApplied reports whether live carries desired's marks for app: the
// inventory label and the config hash of desired, as pinbot last applied
// it from the same rendered content.
func AsApplied(app string, desired, live *unstructured.Unstructured) (bool, error) {
	h, err := ConfigHash(desired)
	if err != nil {
		return false, err
	}
	return live.GetAnnotations()[AnnotationHash] == h && live.GetLabels()[LabelApp] == app, nil
}

// AppliedByPinbot reports whether pinbot's field manager has applied u.
func AppliedByPinbot(u *unstructured.Unstructured) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// Controlled reports whether u has a controller owner reference.
func Controlled(u *unstructured.Unstructured) bool {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// InInventory reports whether u belongs to app's inventory: labelled for
// app, applied by pinbot, and not created by a controller.
func InInventory(u *unstructured.Unstructured, app string) bool {
	if u.GetLabels()[LabelApp] != app || Controlled(u) {
		return false
	}
	if _, ok := u.GetAnnotations()[AnnotationHash]; ok {
		return true
	}
	return AppliedByPinbot(u)
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

// IsJob reports whether o is a batch Job.
func IsJob(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "batch" && gvk.Kind == "Job"
}
