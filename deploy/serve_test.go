package deploy

import (
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/resmap"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
	"pinbot.dev/pinbot/serve"
)

// stateNamespace is the namespace deploy/ creates: pinbot runs there and
// keeps its Lease and history there.
const stateNamespace = "pinbot-system"

// decode finds kind/name in m and decodes it into out.
func decode(t *testing.T, m resmap.ResMap, kind, name string, out any) {
	t.Helper()
	for _, r := range m.Resources() {
		if r.GetKind() != kind || r.GetName() != name {
			continue
		}
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := sigsyaml.UnmarshalStrict(b, out); err != nil {
			t.Fatalf("%s %s: %s", kind, name, err)
		}
		return
	}
	t.Fatalf("kustomize build deploy holds no %s %s", kind, name)
}

// TestServeDeployment checks that the Deployment runs `pinbot serve` as
// issue 11 asks: two replicas electing a leader under the Pod's name,
// probes on /healthz and /readyz, resources, non-root on a read-only root
// filesystem, every file it reads mounted and every directory it writes
// an emptyDir, a grace period longer than the shutdown, and a Service and
// a PodDisruptionBudget for its Pods.
func TestServeDeployment(t *testing.T) {
	m := build(t, "overlays/example")
	var dep appsv1.Deployment
	decode(t, m, "Deployment", "pinbot", &dep)
	if dep.Namespace != stateNamespace {
		t.Errorf("Deployment in namespace %q, want %q", dep.Namespace, stateNamespace)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The args, read by serve's own flag set.
	root := cli.NewRootCommand()
	cmd, rest, err := root.Find(c.Args)
	if err != nil || cmd.Name() != "serve" {
		t.Fatalf("args %q do not run pinbot serve: %v", c.Args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("args %q: %s", c.Args, err)
	}
	flag := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	if flag("leader-elect") != "true" {
		t.Error("serve runs without --leader-elect")
	}
	if got := flag("id"); got != "$(POD_NAME)" || !fieldEnv(c, "POD_NAME", "metadata.name") {
		t.Errorf("--id %q, want $(POD_NAME) from the downward API's metadata.name", got)
	}
	shutdown, err := time.ParseDuration(flag("shutdown-timeout"))
	if err != nil {
		t.Fatal(err)
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace < shutdown+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %s, want at least --shutdown-timeout (%s) + 10s for the Lease release and the server's close", grace, shutdown)
	}
	_, port, err := net.SplitHostPort(flag("listen"))
	if err != nil {
		t.Fatalf("--listen: %s", err)
	}
	http := containerPort(c, "http")
	if http == nil || port != strconv.Itoa(int(http.ContainerPort)) {
		t.Errorf("containerPort http %v, want --listen's port %s", http, port)
	}
	// The webhook on a port of its own, as the chart has it, which the
	// docs' URL names.
	_, hookPort, err := net.SplitHostPort(flag("webhook-listen"))
	if hook := containerPort(c, "webhook"); err != nil || hook == nil || hookPort != "8081" || hookPort != strconv.Itoa(int(hook.ContainerPort)) {
		t.Errorf("--webhook-listen %q, containerPort webhook %v: want both 8081 (%v)", flag("webhook-listen"), hook, err)
	}

	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s is not GET %s on port http", p.name, p.path)
		}
	}
	for _, r := range []struct {
		field string
		list  corev1.ResourceList
		name  corev1.ResourceName
	}{
		{"requests", c.Resources.Requests, corev1.ResourceCPU},
		{"requests", c.Resources.Requests, corev1.ResourceMemory},
		{"limits", c.Resources.Limits, corev1.ResourceMemory},
	} {
		if q, ok := r.list[r.name]; !ok || q.IsZero() {
			t.Errorf("resources.%s.%s not set", r.field, r.name)
		}
	}

	psc, sc := pod.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532:
		t.Errorf("pod securityContext %+v, want runAsNonRoot as 65532", psc)
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("pod seccompProfile %+v, want RuntimeDefault", psc.SeccompProfile)
	case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("the root filesystem is writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want drop ALL and add none", sc.Capabilities)
	}

	// What serve reads is mounted read-only; where it writes is an emptyDir.
	var cm corev1.ConfigMap
	decode(t, m, "ConfigMap", "pinbot-config", &cm)
	cfgPath := flag("config")
	cfgVol := mountOf(pod, c, cfgPath)
	if cfgVol == nil || cfgVol.ConfigMap == nil || cfgVol.ConfigMap.Name != cm.Name || cm.Data[path.Base(cfgPath)] == "" {
		t.Fatalf("--config %s is not the key %s of ConfigMap %s", cfgPath, path.Base(cfgPath), cm.Name)
	}
	cfg, err := serve.Parse(cfgPath, []byte(cm.Data[path.Base(cfgPath)]))
	if err != nil {
		t.Fatal(err)
	}
	reads := []string{flag("webhook-secret-file"), env(c, "DOCKER_CONFIG") + "/config.json"}
	if cfg.Forge != nil && cfg.Forge.TokenFile != "" {
		reads = append(reads, cfg.Forge.TokenFile)
	}
	for _, a := range cfg.Apps {
		if a.Auth != nil && a.Auth.TokenFile != "" {
			reads = append(reads, a.Auth.TokenFile)
		}
	}
	for _, f := range reads {
		v := mountOf(pod, c, f)
		if v == nil || v.Secret == nil {
			t.Errorf("%s, which serve reads, is not in a mounted Secret", f)
		}
	}
	for _, dir := range []string{flag("cache-dir"), env(c, "HOME"), "/tmp"} {
		v := mountOf(pod, c, dir+"/x")
		if v == nil || v.EmptyDir == nil {
			t.Errorf("%s, which serve writes, is not an emptyDir", dir)
		}
	}

	podLabels := labels.Set(dep.Spec.Template.Labels)
	var svc corev1.Service
	decode(t, m, "Service", "pinbot", &svc)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the Pods %v", svc.Spec.Selector, podLabels)
	}
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].TargetPort.String() != "http" || svc.Spec.Ports[0].Port != 80 ||
		svc.Spec.Ports[1].TargetPort.String() != "webhook" || svc.Spec.Ports[1].Port != 8081 {
		t.Errorf("Service ports %+v, want 80 to the Pods' http and 8081 to their webhook, as the chart's", svc.Spec.Ports)
	}
	var pdb policyv1.PodDisruptionBudget
	decode(t, m, "PodDisruptionBudget", "pinbot", &pdb)
	sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels)
	if !sel.Matches(podLabels) || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %+v, want minAvailable 1 of the Pods", pdb.Spec)
	}

	// serve drifts on the config's promote: schedules; no CronJob is left.
	for _, r := range m.Resources() {
		if r.GetKind() == "CronJob" || r.GetKind() == "Job" {
			t.Errorf("kustomize build deploy holds %s %s; serve runs drift itself", r.GetKind(), r.GetName())
		}
	}
}

// fieldEnv reports whether c's variable name comes from the Pod's field.
func fieldEnv(c corev1.Container, name, field string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == field
		}
	}
	return false
}

// env returns the literal value of c's variable name.
func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func containerPort(c corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// mountOf returns the volume mounted where file lies, read-only for any
// volume but an emptyDir, or nil.
func mountOf(pod corev1.PodSpec, c corev1.Container, file string) *corev1.Volume {
	for _, vm := range c.VolumeMounts {
		if !strings.HasPrefix(file, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			continue
		}
		for i := range pod.Volumes {
			v := &pod.Volumes[i]
			if v.Name == vm.Name && (vm.ReadOnly || v.EmptyDir != nil) {
				return v
			}
		}
	}
	return nil
}
