package deployer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/verdict"
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
			want: Judgement{Verdict: verdict.Verified},
		},
		{
			name: "at the head, a stale node runs the old digest", kind: ArgoCD, atHead: true,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestOld},
			want: Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "Argo CD behind, runs the deployed digest", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestOld},
			want: Judgement{Verdict: verdict.Pending, Reason: "Argo CD has not synced " + head + " yet"},
		},
		{
			name: "Flux behind, runs the deployed digest", kind: Flux, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestOld},
			want: Judgement{Verdict: verdict.Pending, Reason: "Flux has not applied " + head + " yet"},
		},
		{
			name: "behind, runs neither", kind: Flux, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestX},
			want: Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestX + ", the head pins " + digestNew + " and the deployed revision " + digestOld},
		},
		{
			name: "behind, but the digest did not change between them", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestNew},
			want: Judgement{Verdict: verdict.Verified},
		},
		{
			name: "behind, same digest both sides, runs another", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestNew, Running: digestOld},
			want: Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "behind, the container is new at the head", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Running: digestOld},
			want: Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "at the head, runs the previous revision's digest", kind: ArgoCD, atHead: true,
			c:    Container{Head: digestNew, Deployed: digestOld, Running: digestOld},
			want: Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestOld + ", Git " + digestNew},
		},
		{
			name: "not started", kind: ArgoCD, atHead: false,
			c:    Container{Head: digestNew, Deployed: digestOld},
			want: Judgement{Verdict: verdict.Pending, Reason: "not started yet"},
		},
		{
			name: "the head pins no digest", kind: Flux, atHead: true,
			c:    Container{Running: digestOld},
			want: Judgement{Verdict: verdict.Unknown, Reason: "the head does not pin the image by digest"},
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
	mismatch := Judgement{Verdict: verdict.Mismatch, Reason: "running config sha256:aa, Git sha256:bb has config sha256:cc for linux/amd64"}
	tests := []struct {
		name       string
		atHead     bool
		vsHead     Judgement
		vsDeployed verdict.Verdict
		want       Judgement
	}{
		{"behind, runs the deployed image", false, mismatch, verdict.Verified, Judgement{verdict.Pending, "Argo CD has not synced " + head + " yet"}},
		{"behind, runs neither", false, mismatch, verdict.Mismatch, mismatch},
		{"behind, the deployed comparison unknown", false, mismatch, verdict.Unknown, mismatch},
		{"at the head", true, mismatch, verdict.Verified, mismatch},
		{"verified stands", false, Judgement{Verdict: verdict.Verified, Reason: "the linux/arm64 child of the pinned index"}, verdict.Mismatch, Judgement{Verdict: verdict.Verified, Reason: "the linux/arm64 child of the pinned index"}},
		{"unknown stands", false, Judgement{Verdict: verdict.Unknown, Reason: "registry unreachable"}, verdict.Verified, Judgement{Verdict: verdict.Unknown, Reason: "registry unreachable"}},
		{"pending stands", false, Judgement{Verdict: verdict.Pending, Reason: "not started yet: ContainerCreating"}, verdict.Verified, Judgement{Verdict: verdict.Pending, Reason: "not started yet: ContainerCreating"}},
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
		verdicts []verdict.Verdict
		want     bool
	}{
		{"at the head, all verified", true, []verdict.Verdict{verdict.Verified, verdict.Verified}, true},
		{"behind, all verified", false, []verdict.Verdict{verdict.Verified, verdict.Verified}, false},
		{"at the head, one pending", true, []verdict.Verdict{verdict.Verified, verdict.Pending}, false},
		{"at the head, one mismatch", true, []verdict.Verdict{verdict.Mismatch, verdict.Verified}, false},
		{"at the head, one unknown", true, []verdict.Verdict{verdict.Verified, verdict.Unknown}, false},
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
