package deploy

import (
	"bytes"
	"os"
	"testing"
)

// TestOneProofCRD: the chart's crds/ and deploy/components/proofs
// install the same Proof CustomResourceDefinition.
func TestOneProofCRD(t *testing.T) {
	chart, err := os.ReadFile("../charts/pinbot/crds/proofs.pinbot.dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	component, err := os.ReadFile("components/proofs/proofs.pinbot.dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(chart, component) {
		t.Error("charts/pinbot/crds/proofs.pinbot.dev.yaml and deploy/components/proofs/proofs.pinbot.dev.yaml differ: copy one over the other")
	}
}
