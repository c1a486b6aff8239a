package installed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

func TestConfigArg(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"serve", "--config", "/etc/pinbot/config/reconciler.yaml", "--listen", ":8080"}, "/etc/pinbot/config/reconciler.yaml", true},
		{[]string{"serve", "--listen=:8080", "--config=/etc/c.yaml"}, "/etc/c.yaml", true},
		{[]string{"reconcile", "--config", "/etc/c.yaml"}, "", false},
		{[]string{"serve", "--config="}, "", false},
		{[]string{"serve", "--config"}, "", false},
		{nil, "", false},
	} {
		if got, ok := configArg(tc.args); got != tc.want || ok != tc.ok {
			t.Errorf("configArg(%q) = %q, %t; want %q, %t", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFindLaysTheMountsOut installs serve's shape (a ConfigMap volume, a
// Secret volume with items, a subPath mount and a projected volume) on a
// real control plane, and reads it back as an admin and as a user who may
// not read Secrets.
func TestFindLaysTheMountsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err := kube.Start(ctx, kube.Options{Users: []kube.User{{Name: "reader"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "control plane logs:\n%s", cluster.Tail(30))
		}
		_ = cluster.Stop()
	})
	admin, err := kubernetes.NewForConfig(cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pinbot-system"
	install(ctx, t, admin, ns)

	runtimeDir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", runtimeDir)
	s, err := Find(ctx, admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Root, runtimeDir+string(os.PathSeparator)) {
		t.Errorf("laid out in %s, want the user's runtime directory %s", s.Root, runtimeDir)
	}
	if s.Deployment != ns+"/pinbot" || s.Config != "/etc/pinbot/config/reconciler.yaml" || len(s.Unread) != 0 {
		t.Errorf("found %+v", s)
	}
	for pod, want := range map[string]string{
		"/etc/pinbot/config/reconciler.yaml": "interval: 60s\n",
		"/etc/pinbot/config/keys/cosign.pub": "PUBLIC KEY",
		"/etc/pinbot/gitea/token":            "s3cret",
		"/etc/ssl/extra/ca.pem":              "CA",
		"/etc/pinbot/projected/r.yaml":       "interval: 60s\n",
		"/etc/pinbot/projected/token":        "s3cret",
	} {
		local, ok := s.Local(pod)
		b, err := os.ReadFile(local)
		if !ok || err != nil || string(b) != want {
			t.Errorf("%s: laid out %t at %s: %q, %v; want %q", pod, ok, local, b, err, want)
		}
		if got := s.Path(pod); got != local {
			t.Errorf("Path(%s) = %s, want %s", pod, got, local)
		}
	}
	for _, absent := range []string{"/etc/pinbot/gitea/other", "/etc/ssl/extra/unlisted", "/var/run/secrets/kubernetes.io/serviceaccount/token"} {
		if _, ok := s.Local(absent); ok {
			t.Errorf("%s laid out, want absent", absent)
		}
		if got := s.Path(absent); got != "" {
			t.Errorf("Path(%s) = %q, want none", absent, got)
		}
	}
	// The CAs its SSL_CERT_DIR adds are trusted beside each CA bundle.
	if b, err := os.ReadFile(s.CAFile); err != nil || string(b) != "CA\n" {
		t.Errorf("CAFile %q: %q, %v; want the mounted SSL_CERT_DIR's CA", s.CAFile, b, err)
	}
	if got := s.WithCAs(""); got != s.CAFile {
		t.Errorf("WithCAs(none) = %q, want %q", got, s.CAFile)
	}
	own := filepath.Join(t.TempDir(), "forge-ca.pem")
	if err := os.WriteFile(own, []byte("FORGE CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(s.WithCAs(own)); err != nil || string(b) != "FORGE CA\nCA\n" {
		t.Errorf("WithCAs(the forge's) reads %q, %v; want both CAs", b, err)
	}
	if fi, err := os.Stat(s.Root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("root %s: %v, %v; want a private directory", s.Root, fi.Mode(), err)
	}
	if local, _ := s.Local("/etc/pinbot/gitea/token"); local != "" {
		if fi, err := os.Stat(local); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("token file: %v, %v; want 0600", fi.Mode(), err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Root); !os.IsNotExist(err) {
		t.Errorf("after Close, %s: %v", s.Root, err)
	}

	// A reader who may not get Secrets gets the config, and is told what
	// was left out.
	grant(ctx, t, admin, ns, "reader", []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
	})
	rc, err := cluster.UserConfig("reader")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC's authorizer learns of the binding a moment after it is made.
	poll.Until(t, 30*time.Second, "the reader may list Deployments", func() (bool, string) {
		review, err := reader.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "list", Group: "apps", Resource: "deployments"}}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return review.Status.Allowed, review.Status.Reason
	})
	r, err := Find(ctx, reader, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.Local("/etc/pinbot/config/reconciler.yaml"); !ok {
		t.Error("the reader did not get the config")
	}
	if got := r.Path("/etc/pinbot/gitea/token"); got != "" {
		t.Errorf("the reader got the token at %s", got)
	}
	if unread := strings.Join(r.Unread, "\n"); !strings.Contains(unread, "Secret pinbot-gitea") || !strings.Contains(unread, "forbidden") {
		t.Errorf("unread = %q, want the Secret, forbidden", unread)
	}

	if _, err := Find(ctx, admin, "default"); err == nil || !strings.Contains(err.Error(), "-n") || !strings.Contains(err.Error(), "--config") {
		t.Errorf("Find in a namespace without serve: %v", err)
	}
}

// install creates serve's Deployment (no replicas) and what it mounts.
func install(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("pinbot-config"),
		Data: map[string]string{"reconciler.yaml": "interval: 60s\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("ca"),
		Data: map[string]string{"ca.crt": "CA", "unlisted": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("keys"),
		BinaryData: map[string][]byte{"cosign.pub": []byte("PUBLIC KEY")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta("pinbot-gitea"),
		Data: map[string][]byte{"token": []byte("s3cret"), "other": []byte("x")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := kube.ServeDeployment(ns, []string{"serve", "--config", "/etc/pinbot/config/reconciler.yaml", "--listen=:8080"},
		[]corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/pinbot/config", ReadOnly: true},
			{Name: "keys", MountPath: "/etc/pinbot/config/keys", ReadOnly: true},
			{Name: "gitea", MountPath: "/etc/pinbot/gitea", ReadOnly: true},
			{Name: "ca", MountPath: "/etc/ssl/extra/ca.pem", SubPath: "ca.pem", ReadOnly: true},
			{Name: "projected", MountPath: "/etc/pinbot/projected", ReadOnly: true},
			{Name: "cache", MountPath: "/var/cache/pinbot"},
		},
		[]corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "pinbot-config"}}}},
			{Name: "keys", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}}}},
			{Name: "gitea", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "pinbot-gitea", Items: []corev1.KeyToPath{{Key: "token", Path: "token"}}}}},
			{Name: "ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "ca"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.pem"}}}}},
			{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "pinbot-config"},
					Items: []corev1.KeyToPath{{Key: "reconciler.yaml", Path: "r.yaml"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "pinbot-gitea"},
					Items: []corev1.KeyToPath{{Key: "token", Path: "token"}}}},
			}}}},
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		})
	// The chart's extraCACerts: the image's roots and a mounted directory.
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env,
		corev1.EnvVar{Name: "SSL_CERT_DIR", Value: "/etc/ssl/certs:/etc/ssl/extra"})
	if _, err := kc.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grant binds a Role of rules to user in ns.
func grant(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	if _, err := kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
