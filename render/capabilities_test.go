package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Cached reads the cluster's Capabilities once, and serves them until
// they are CapabilitiesTTL old: a CRD installed since counts then.
func TestCachedReadsOnce(t *testing.T) {
	dc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}, FakedServerVersion: &version.Info{GitVersion: "v1.35.0"}}
	dc.Resources = []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
	caps := Cached(dc)
	if _, err := Discover(dc); err != nil {
		t.Fatal(err)
	}
	once := len(dc.Actions())
	dc.ClearActions()
	for range 3 {
		c, err := caps()
		if err != nil {
			t.Fatal(err)
		}
		if c.KubeVersion != "v1.35.0" || len(c.APIVersions) != 2 {
			t.Fatalf("capabilities %+v; want v1.35.0 with apps/v1 and apps/v1/Deployment", c)
		}
	}
	if n := len(dc.Actions()); n != once {
		t.Errorf("three reads made %d requests; want one read's %d", n, once)
	}
}
