package verdict

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/imageref"
)

// TestPlatformWithNodesUnread: when the Nodes cannot be read, a Pod's
// platform is what it demands of its Node, and a Pod that demands none
// has no platform; with the Nodes read, an unknown Node stays unknown.
func TestPlatformWithNodesUnread(t *testing.T) {
	pod := func(sel map[string]string, os corev1.OSName) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "n1", NodeSelector: sel}}
		if os != "" {
			p.Spec.OS = &corev1.PodOS{Name: os}
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		unread bool
		pod    *corev1.Pod
		want   imageref.Platform
		err    string
	}{
		{"selector names both", true, pod(map[string]string{"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"}, ""), imageref.Platform{OS: "linux", Architecture: "arm64"}, ""},
		{"arch and spec.os", true, pod(map[string]string{"kubernetes.io/arch": "amd64"}, corev1.Linux), imageref.Platform{OS: "linux", Architecture: "amd64"}, ""},
		{"no arch", true, pod(nil, corev1.Linux), imageref.Platform{}, "names no"},
		{"nodes read, node unknown", false, pod(map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}, ""), imageref.Platform{}, "node n1 of pod web-1 unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newIndex(&Snapshot{NodesUnread: tc.unread}).platform(tc.pod)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("platform = %v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("platform = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
