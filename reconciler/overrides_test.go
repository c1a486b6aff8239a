package reconciler_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestDeployerOverrides: what Argo CD's spec.source.kustomize and a Flux
// Kustomization's spec.images override is what pinbot renders and
// proves. The repository pins v1; each deployer overrides the image to
// v2, and the Pods run v2. A render that ignored the overrides would
// expect v1 and call them Mismatch.
func TestDeployerOverrides(t *testing.T) {
	needPeers(t)
	v1, v2 := pushImage(t, "ov-app", "v1"), pushImage(t, "ov-app", "v2")
	for _, kind := range []string{"argocd", "flux"} {
		t.Run(kind, func(t *testing.T) {
			s := newDeployerScenario(t, "ov-"+kind, kind)
			commit := s.push(map[string]string{"app/deploy.yaml": deployment(1, v1.ref())}, "Initial")
			overridden := strings.Replace(deployment(1, v2.ref()), "name: web", "name: prod-web", 1)
			s.apply(overridden)
			if kind == "argocd" {
				s.createApplication("app", "main", "")
				s.mergePatch(applicationsRes, "argocd", `{spec: {source: {kustomize: {namePrefix: prod-, images: ["`+v1.repo+`@`+v2.digest+`"]}}}}`)
				s.argoSynced(commit, "prod-web")
			} else {
				s.createKustomization("app")
				s.mergePatch(kustomizationsRes, "flux-system", `{spec: {namePrefix: prod-, images: [{name: "`+v1.repo+`", digest: "`+v2.digest+`"}]}}`)
				s.fluxAppliedAs(commit, "prod-web")
			}
			_, v := s.waitStatus(rollout, "verified on the overridden digest", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })
			for _, c := range v.Containers {
				if c.GitDigest != v2.digest || c.RunningDigest != v2.digest {
					t.Errorf("container %+v; want %s, the override's digest", c, v2.digest)
				}
			}
		})
	}
}

// TestFluxPostBuild: a Flux Kustomization's postBuild substitutes the
// digest into the manifests: the ConfigMap of substituteFrom names one
// digest, substitute another that wins, and the Pods run that one.
func TestFluxPostBuild(t *testing.T) {
	v1, v2 := pushImage(t, "pb-app", "v1"), pushImage(t, "pb-app", "v2")
	s := newDeployerScenario(t, "pb-flux", "flux")
	if _, err := env.kube.CoreV1().ConfigMaps("flux-system").Create(testCtx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pb-vars", Namespace: "flux-system"},
		Data:       map[string]string{"app_digest": v1.digest, "replicas": "1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(1, v1.repo+"@${app_digest}")}, "Initial")
	s.apply(deployment(1, v2.ref()))
	s.createKustomization("app")
	s.mergePatch(kustomizationsRes, "flux-system", `{spec: {postBuild: {substitute: {app_digest: "`+v2.digest+`"}, substituteFrom: [{kind: ConfigMap, name: pb-vars}, {kind: Secret, name: absent, optional: true}]}}}`)
	s.fluxApplied(commit)
	_, v := s.waitStatus(rollout, "verified on the substituted digest", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest {
			t.Errorf("container %+v; want Git's digest to be substitute's %s", c, v2.digest)
		}
	}
}
