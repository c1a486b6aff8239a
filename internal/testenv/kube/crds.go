package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// The CRD files `make crds` copies into bin/crds from the deployers'
// module source, for CRDFile.
const (
	// ApplicationCRD is Argo CD's Application (argoproj.io/v1alpha1).
	ApplicationCRD = "application-crd.yaml"
	// AppProjectCRD is Argo CD's AppProject, which only the real
	// controller needs.
	AppProjectCRD = "appproject-crd.yaml"
	// ApplicationSetCRD is Argo CD's ApplicationSet, which its
	// applicationset-controller reads.
	ApplicationSetCRD = "applicationset-crd.yaml"
	// KustomizationCRD is Flux's Kustomization
	// (kustomize.toolkit.fluxcd.io/v1).
	KustomizationCRD = "kustomize.toolkit.fluxcd.io_kustomizations.yaml"
	// GitRepositoryCRD is Flux's GitRepository (source.toolkit.fluxcd.io/v1).
	GitRepositoryCRD = "source.toolkit.fluxcd.io_gitrepositories.yaml"
	// HelmReleaseCRD is Flux's HelmRelease (helm.toolkit.fluxcd.io/v2).
	HelmReleaseCRD = "helm.toolkit.fluxcd.io_helmreleases.yaml"
	// HelmRepositoryCRD and OCIRepositoryCRD are Flux's chart sources
	// (source.toolkit.fluxcd.io/v1).
	HelmRepositoryCRD = "source.toolkit.fluxcd.io_helmrepositories.yaml"
	OCIRepositoryCRD  = "source.toolkit.fluxcd.io_ocirepositories.yaml"
	// BucketCRD, HelmChartCRD and ExternalArtifactCRD are the other kinds
	// Flux's source-controller serves; only the real controller needs them.
	BucketCRD           = "source.toolkit.fluxcd.io_buckets.yaml"
	HelmChartCRD        = "source.toolkit.fluxcd.io_helmcharts.yaml"
	ExternalArtifactCRD = "source.toolkit.fluxcd.io_externalartifacts.yaml"
	// ServiceMonitorCRD is the Prometheus Operator's ServiceMonitor
	// (monitoring.coreos.com/v1), which pinbot's chart can render.
	ServiceMonitorCRD = "monitoring.coreos.com_servicemonitors.yaml"
)

// crdFieldManager owns the CRDs InstallCRDs applies.
const crdFieldManager = "pinbot-testenv"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRDFile returns the path of a CRD file `make crds` wrote (one of
// the constants above) under bin/crds of
// $PINBOT_BIN_DIR, else of the pinbot module, and says to run `make crds`
// when it is missing.
func CRDFile(name string) (string, error) {
	dir := os.Getenv("PINBOT_BIN_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	dir = filepath.Join(dir, "crds")
	// VERSIONS is written last: without it the directory is incomplete.
	for _, f := range []string{"VERSIONS", name} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("finding %s in %s: %w (run `make crds` to copy the deployers' CRDs)", f, dir, err)
		}
	}
	return filepath.Join(dir, name), nil
}

// InstallNamedCRDs installs the CRDs of the peers' files named (CRDFile),
// as InstallCRDs does.
func (c *Cluster) InstallNamedCRDs(ctx context.Context, names ...string) error {
	files := make([]string, 0, len(names))
	for _, name := range names {
		f, err := CRDFile(name)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	return c.InstallCRDs(ctx, files...)
}

// InstallCRDs applies the CustomResourceDefinitions in files (YAML, one
// or more documents each) to the cluster with server-side apply, so
// installing again is a no-op, and waits until each is Established and
// its names accepted, when its resources can be served. ctx bounds the
// whole, as does a two-minute limit of its own.
func (c *Cluster) InstallCRDs(ctx context.Context, files ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	var names []string
	for _, f := range files {
		crds, err := readCRDs(f)
		if err != nil {
			return err
		}
		for _, crd := range crds {
			_, err := client.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: crdFieldManager, Force: true})
			if err != nil {
				return fmt.Errorf("applying CustomResourceDefinition %s from %s: %w", crd.GetName(), f, err)
			}
			names = append(names, crd.GetName())
		}
	}
	for _, name := range names {
		if err := waitEstablished(ctx, client, name); err != nil {
			return err
		}
	}
	return nil
}

// readCRDs reads every CustomResourceDefinition of a YAML file; any other
// kind of document is an error naming the file.
func readCRDs(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading CRDs from %s, document %d: %w", file, i, err)
		}
		if len(u.Object) == 0 {
			continue // an empty document between two ---
		}
		if u.GetKind() != "CustomResourceDefinition" || u.GetName() == "" {
			return nil, fmt.Errorf("reading CRDs from %s, document %d: want a named CustomResourceDefinition, got kind %q name %q", file, i, u.GetKind(), u.GetName())
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("reading CRDs from %s: no CustomResourceDefinition", file)
	}
	return out, nil
}

// waitEstablished polls a CRD until its Established and NamesAccepted
// conditions are True.
func waitEstablished(ctx context.Context, client dynamic.Interface, name string) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last := "not read yet"
	for {
		u, err := client.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			established, accepted := crdConditions(u)
			if established && accepted {
				return nil
			}
			last = fmt.Sprintf("Established %v, NamesAccepted %v", established, accepted)
		} else if ctx.Err() == nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for CustomResourceDefinition %s to be established (last: %s): %w", name, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func crdConditions(u *unstructured.Unstructured) (established, accepted bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["status"] != "True" {
			continue
		}
		switch m["type"] {
		case "Established":
			established = true
		case "NamesAccepted":
			accepted = true
		}
	}
	return established, accepted
}
