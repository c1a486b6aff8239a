package kube

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is shared by the tests of this package; nil under -short.
var cluster *Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if !testing.Short() {
		c, err := Start(context.Background(), Options{Users: []User{{Name: "viewer"}}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "starting the control plane: %s\n", err.Error())
			return 1
		}
		fmt.Fprintf(os.Stderr, "control plane up in %s (%s)\n", c.StartupTime.Round(time.Millisecond), c.Host)
		cluster = c
		defer func() {
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the control plane: %s\n", err.Error())
			}
		}()
	}
	code := m.Run()
	if code != 0 && cluster != nil {
		fmt.Fprintf(os.Stderr, "control plane logs:\n%s", cluster.Tail(40))
	}
	return code
}

func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
}

func TestMissingBinariesSayHowToBuildThem(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make kube") {
		t.Fatalf("Start with an empty bin dir: got error %v, want one that says to run `make kube`", err)
	}
}

func TestFindBinDirWalksUpToThePinbotModule(t *testing.T) {
	t.Setenv("PINBOT_BIN_DIR", "")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if !isPinbotModule(filepath.Join(root, "go.mod")) {
		t.Fatalf("moduleRoot() = %s, whose go.mod is not module pinbot.dev/pinbot", root)
	}
	if isPinbotModule(filepath.Join(root, "hack", "tools", "kube", "go.mod")) {
		t.Fatal("the kube tools module was taken for the pinbot module")
	}
}

func TestControllerManagerTurnsDeploymentsIntoPods(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cluster.Config())

	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}) })

	labels := map[string]string{"app": "web"}
	replicas := int32(2)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "127.0.0.1:1/web:v1"}}},
			},
		},
	}
	if dep, err = client.AppsV1().Deployments(ns.Name).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The deployment controller makes a ReplicaSet; the replicaset
	// controller makes its Pods, which the ServiceAccount admission plugin
	// lets through only because the serviceaccount controller made the
	// namespace's default ServiceAccount.
	var pods []corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		rss, err := client.AppsV1().ReplicaSets(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil || len(rss.Items) != 1 {
			return false, err
		}
		if owner := metav1.GetControllerOf(&rss.Items[0]); owner == nil || owner.UID != dep.UID {
			return false, fmt.Errorf("ReplicaSet %s is not owned by Deployment web", rss.Items[0].Name)
		}
		list, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == int(replicas), nil
	})
	if err != nil {
		t.Fatalf("waiting for a ReplicaSet and %d Pods: %v (pods: %d)", replicas, err, len(pods))
	}
	for _, p := range pods {
		if p.Spec.ServiceAccountName != "default" {
			t.Errorf("pod %s: serviceAccountName %q, want default", p.Name, p.Spec.ServiceAccountName)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s bound to %q with no scheduler running", p.Name, p.Spec.NodeName)
		}
	}
}

func TestKubeconfigFileReachesTheServer(t *testing.T) {
	needCluster(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// The version comes from -ldflags in the Makefile; clients parse it.
	if v.GitVersion != "v1.37.2" || v.Major != "1" || v.Minor != "37" {
		t.Errorf("server version = %s (major %q minor %q), want v1.37.2", v.GitVersion, v.Major, v.Minor)
	}
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("admin kubeconfig cannot read namespace kube-system: %v", err)
	}
}

func TestRBACAppliesToExtraUsers(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	path, err := cluster.UserKubeconfig("viewer")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("viewer listing pods with no RBAC grant: got %v, want Forbidden", err)
	}
	if _, err := cluster.UserConfig("nobody"); err == nil {
		t.Error("UserConfig of an unknown user: no error")
	}
}

func TestStopEndsEveryComponent(t *testing.T) {
	needCluster(t)
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second control plane up in %s", c.StartupTime)
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		// Reaped children are gone: signal 0 finds no such process.
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still running after Stop", pid)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s behind (stat: %v)", c.Dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}
