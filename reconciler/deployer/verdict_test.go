package deployer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	digestOld = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestNew = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	digestX   = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	head      = "cccccccccccccccccccccccccccccccccccccccc"
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name   string
		kind   Kind
		atHead bool
		c      Container
		want   Judgement
	}{
		{
			name: "at the head, runs the head's digest", kind: ArgoCD, atHead: true,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestNew},
			want: Judgement{Verdict: Verified},
		},
		{
			name: "at the head, a stale node runs the old digest", kind: ArgoCD, atHead: true,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestOld},
			want: Judgement{Verdict: Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "Argo CD behind, runs the deployed digest", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestOld},
			want: Judgement{Verdict: Pending, Reason: "Argo CD has not synced " + head + " yet"},
		},
		{
			name: "Flux behind, runs the deployed digest", kind: Flux, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestOld},
			want: Judgement{Verdict: Pending, Reason: "Flux has not applied " + head + " yet"},
		},
		{
			name: "behind, runs neither", kind: Flux, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestX},
			want: Judgement{Verdict: Mismatch, Reason: "running " + digestX + ", the head pins " + digestNew + " and the deployed revision " + digestOld},
		},
		{
			name: "behind, but the digest did not change between them", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestNew},
			want: Judgement{Verdict: Verified},
		},
		{
			name: "behind, same digest both sides, runs another", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestOld},
			want: Judgement{Verdict: Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "behind, the container is new at the head", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Running: digestOld},
			want: Judgement{Verdict: Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "at the head, runs the previous revision's digest", kind: ArgoCD, atHead: true,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestOld},
			want: Judgement{Verdict: Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "not started", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld},
			want: Judgement{Verdict: Pending, Reason: "not started yet"},
		},
		{
			name: "the head pins no digest", kind: Flux, atHead: true,
			c:    Container{Running: digestOld},
			want: Judgement{Verdict: Unknown, Reason: "the head does not pin the image by digest"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.kind, head, tc.atHead, tc.c)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Judge (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRelate(t *testing.T) {
	mismatch := Judgement{Verdict: Mismatch, Reason: "running config sha256:aa, Git sha256:bb has config sha256:cc for linux/amd64"}
	tests := []struct {
		name       string
		atHead     bool
		vsHead     Judgement
		vsDeployed Verdict
		want       Judgement
	}{
		{"behind, runs the deployed image", false, mismatch, Verified, Judgement{Pending, "Argo CD has not synced " + head + " yet"}},
		{"behind, runs neither", false, mismatch, Mismatch, mismatch},
		{"behind, the deployed comparison unknown", false, mismatch, Unknown, mismatch},
		{"at the head", true, mismatch, Verified, mismatch},
		{"verified stands", false, Judgement{Verdict: Verified, Reason: "the linux/arm64 child of the pinned index"}, Mismatch, Judgement{Verdict: Verified, Reason: "the linux/arm64 child of the pinned index"}},
		{"unknown stands", false, Judgement{Verdict: Unknown, Reason: "registry unreachable"}, Verified, Judgement{Verdict: Unknown, Reason: "registry unreachable"}},
		{"pending stands", false, Judgement{Verdict: Pending, Reason: "not started yet: ContainerCreating"}, Verified, Judgement{Verdict: Pending, Reason: "not started yet: ContainerCreating"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Relate(ArgoCD, head, tc.atHead, tc.vsHead, tc.vsDeployed)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Relate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsVerified(t *testing.T) {
	tests := []struct {
		name     string
		atHead   bool
		verdicts []Verdict
		want     bool
	}{
		{"at the head, all verified", true, []Verdict{Verified, Verified}, true},
		{"behind, all verified", false, []Verdict{Verified, Verified}, false},
		{"at the head, one pending", true, []Verdict{Verified, Pending}, false},
		{"at the head, one mismatch", true, []Verdict{Mismatch, Verified}, false},
		{"at the head, one unknown", true, []Verdict{Verified, Unknown}, false},
		{"at the head, no containers", true, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsVerified(tc.atHead, tc.verdicts); got != tc.want {
				t.Errorf("IsVerified(%v, %v) = %v, want %v", tc.atHead, tc.verdicts, got, tc.want)
			}
		})
	}
}

func TestKindTitle(t *testing.T) {
	for k, want := range map[Kind]string{ArgoCD: "Argo CD", Flux: "Flux", Pinbot: "pinbot"} {
		if got := k.Title(); got != want {
			t.Errorf("%q.Title() = %q, want %q", k, got, want)
		}
	}
}
