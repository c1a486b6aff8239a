// Package pinstest writes synthetic manifest trees for benchmarks and
// demos of package pins: Kubernetes workloads (most of them), Helm values,
// kustomizations, Dockerfiles and pins files, with a known number of pins.
package pinstest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Tree describes a tree to write.
type Tree struct {
	Files int // files, every one holding at least one pin
	Pins  int // pins in all; at least Files
	Repos int // distinct repositories, at least 2
	// SetFiles is how many files hold a pin of Target, the repository a
	// benchmark sets; at most Files.
	SetFiles int
	Seed     uint64
}

// Stats reports what WriteTree wrote.
type Stats struct {
	Files, Pins int
	Bytes       int64
	Target      string // repository with pins in exactly SetFiles files
	TargetPins  int
}

// WriteTree writes t under dir, which must exist.
func WriteTree(dir string, t Tree) (Stats, error) {
	if t.Files < 1 || t.Pins < t.Files || t.Repos < 2 || t.SetFiles > t.Files {
		return Stats{}, fmt.Errorf("pinstest: impossible tree %+v", t)
	}
	rng := rand.New(rand.NewPCG(t.Seed, 0x5eed))
	repos := make([]string, t.Repos)
	repos[0] = "127.0.0.1:5000/platform/target"
	for i := 1; i < t.Repos; i++ {
		switch i % 4 {
		case 0:
			repos[i] = fmt.Sprintf("127.0.0.1:5000/org/svc%03d", i)
		case 1:
			repos[i] = fmt.Sprintf("registry.example.com/team%02d/app%03d", i%17, i)
		case 2:
			repos[i] = fmt.Sprintf("ghcr.io/example/tool%03d", i)
		default:
			repos[i] = fmt.Sprintf("library%03d/base", i)
		}
	}
	// Spread the pins: every file gets one, the rest go at random.
	counts := make([]int, t.Files)
	for i := range counts {
		counts[i] = 1
	}
	for extra := t.Pins - t.Files; extra > 0; extra-- {
		counts[rng.IntN(t.Files)]++
	}
	// Files i*step hold Target once.
	isTarget := make([]bool, t.Files)
	if t.SetFiles > 0 {
		step := t.Files / t.SetFiles
		for i := 0; i < t.SetFiles; i++ {
			isTarget[i*step] = true
		}
	}

	st := Stats{Target: "127.0.0.1:5000/platform/target"}
	for i := 0; i < t.Files; i++ {
		images := make([]image, counts[i])
		for j := range images {
			r := 1 + rng.IntN(t.Repos-1)
			images[j] = image{repo: repos[r], tag: fmt.Sprintf("v1.%d.%d", r%7, j), digest: digest(rng)}
		}
		if isTarget[i] {
			images[0].repo = repos[0]
			st.TargetPins++
		}
		var rel, content string
		switch k := i % 100; {
		case k < 80:
			rel, content = fmt.Sprintf("apps/team%02d/app%04d/deployment.yaml", i%50, i), workload(rng, i, images)
		case k < 88:
			rel, content = fmt.Sprintf("charts/chart%04d/values.yaml", i), helmValues(images)
		case k < 92:
			rel, content = fmt.Sprintf("overlays/env%04d/kustomization.yaml", i), kustomization(images)
		case k < 97:
			rel, content = fmt.Sprintf("build/img%04d/Dockerfile", i), dockerfile(images)
		default:
			rel, content = fmt.Sprintf("agents/agent%04d.pins.yaml", i), pinsFile(images)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return st, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return st, err
		}
		st.Files++
		st.Pins += len(images)
		st.Bytes += int64(len(content))
	}
	return st, nil
}

type image struct{ repo, tag, digest string }

func (im image) ref() string { return im.repo + ":" + im.tag + "@" + im.digest }

func digest(rng *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 64)
	for i := range b {
		b[i] = hex[rng.IntN(16)]
	}
	return "sha256:" + string(b)
}

// workload writes a Deployment (some with a Service, a ConfigMap or
// anchors) whose containers and init containers hold the images.
func workload(rng *rand.Rand, i int, images []image) string {
	var b strings.Builder
	name := fmt.Sprintf("app%04d", i)
	fmt.Fprintf(&b, `# Managed by the platform team; images are pinned by pinbot.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: team%02d
  labels:
    app.kubernetes.io/name: %s
    app.kubernetes.io/part-of: shop
spec:
  replicas: %d
  selector:
    matchLabels:
      app.kubernetes.io/name: %s
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %s
      annotations:
        prometheus.io/scrape: "true"
    spec:
      serviceAccountName: %s
`, name, i%50, name, 1+rng.IntN(4), name, name, name)
	anchors := i%33 == 0
	init := 0
	if len(images) > 2 {
		init = 1
		b.WriteString("      initContainers:\n")
		fmt.Fprintf(&b, "      - name: migrate\n        image: %s\n        command: [\"/bin/migrate\", \"--up\"]\n", images[0].ref())
	}
	b.WriteString("      containers:\n")
	for j, im := range images[init:] {
		ref := im.ref()
		if j%3 == 1 {
			ref = `"` + ref + `"`
		}
		if anchors && j == 0 {
			ref = "&main " + ref
		}
		fmt.Fprintf(&b, `      - name: c%d
        image: %s
        imagePullPolicy: IfNotPresent
        args: ["--port=%d", "--log-level=info"]
        ports:
        - name: http
          containerPort: %d
        env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        readinessProbe:
          httpGet: {path: /healthz, port: http}
          periodSeconds: 5
        resources:
          requests: {cpu: 50m, memory: 64Mi}
          limits:
            memory: 256Mi
`, j, ref, 8080+j, 8080+j)
	}
	if i%5 == 0 {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata:
  name: %s
spec:
  selector:
    app.kubernetes.io/name: %s
  ports:
  - port: 80
    targetPort: http
`, name, name)
	}
	if i%9 == 0 {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s-config
data:
  config.yaml: |
    # not a pin: a blob that mentions an image
    sidecar: %s
    retries: 3
`, name, images[0].ref())
	}
	return b.String()
}

func helmValues(images []image) string {
	var b strings.Builder
	b.WriteString("replicaCount: 2\n")
	for j, im := range images {
		key := "image"
		if j > 0 {
			key = fmt.Sprintf("sidecar%d", j)
			fmt.Fprintf(&b, "%s:\n  enabled: true\n  image:\n", key)
		} else {
			b.WriteString("image:\n")
		}
		ind := "  "
		if j > 0 {
			ind = "    "
		}
		fmt.Fprintf(&b, "%srepository: %s\n%stag: %q\n%sdigest: %s\n%spullPolicy: IfNotPresent\n",
			ind, im.repo, ind, im.tag, ind, im.digest, ind)
	}
	b.WriteString("service:\n  type: ClusterIP\n  port: 80\nresources: {}\n")
	return b.String()
}

func kustomization(images []image) string {
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../base\nimages:\n")
	for j, im := range images {
		fmt.Fprintf(&b, "- name: placeholder%d\n  newName: %s\n  newTag: %q\n  digest: %s\n", j, im.repo, im.tag, im.digest)
	}
	return b.String()
}

func dockerfile(images []image) string {
	var b strings.Builder
	b.WriteString("# syntax=docker/dockerfile:1\n")
	for j, im := range images {
		fmt.Fprintf(&b, "FROM --platform=$BUILDPLATFORM %s AS stage%d\nRUN make -C /src build-%d\n\n", im.ref(), j, j)
	}
	b.WriteString("FROM stage0\nCOPY --from=stage0 /out /out\n")
	return b.String()
}

func pinsFile(images []image) string {
	var b strings.Builder
	b.WriteString("# Base images the build agents use.\npins:\n")
	for j, im := range images {
		fmt.Fprintf(&b, "  tool%d:\n    image: %s\n    tag: %q\n    digest: %s\n", j, im.repo, im.tag, im.digest)
	}
	return b.String()
}
