package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

func TestInstallCRDs(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var files []string
	for _, name := range []string{ApplicationCRD, KustomizationCRD, GitRepositoryCRD} {
		f, err := CRDFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if err := cluster.InstallCRDs(ctx, files...); err != nil {
		t.Fatalf("InstallCRDs: %s", err)
	}
	// Again: server-side apply makes it a no-op, not a conflict.
	if err := cluster.InstallCRDs(ctx, files...); err != nil {
		t.Fatalf("InstallCRDs a second time: %s", err)
	}
	client := dynamic.NewForConfigOrDie(cluster.Config())
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
		{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"},
	} {
		// Established means served: a list answers at once.
		if _, err := client.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("listing %s right after InstallCRDs: %s", gvr, err)
		}
	}
}

func TestReadCRDsErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, want string
	}{
		{"not a CRD", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", `document 1: want a named CustomResourceDefinition, got kind "ConfigMap"`},
		{"second document unnamed", "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.example.com}\n---\nkind: CustomResourceDefinition\n", "document 2: want a named CustomResourceDefinition"},
		{"empty", "---\n", "no CustomResourceDefinition"},
		{"bad YAML", "kind: [\n", "document 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(f, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readCRDs(f)
			if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readCRDs = %v, want an error naming %s and saying %q", err, f, tc.want)
			}
		})
	}
}

func TestCRDFileSaysHowToCopyThem(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PINBOT_BIN_DIR", dir)
	_, err := CRDFile(ApplicationCRD)
	if err == nil || !strings.Contains(err.Error(), "make crds") {
		t.Errorf("CRDFile without bin/crds = %v, want an error saying to run make crds", err)
	}
	// The file without VERSIONS: an interrupted copy.
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crds", ApplicationCRD), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CRDFile(ApplicationCRD); err == nil || !strings.Contains(err.Error(), "VERSIONS") {
		t.Errorf("CRDFile without VERSIONS = %v, want an error naming VERSIONS", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crds", "VERSIONS"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := CRDFile(ApplicationCRD)
	if err != nil || got != filepath.Join(dir, "crds", ApplicationCRD) {
		t.Errorf("CRDFile = %q, %v; want %s", got, err, filepath.Join(dir, "crds", ApplicationCRD))
	}
}
