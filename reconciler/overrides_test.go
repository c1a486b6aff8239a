package reconciler_test

import (
	"strings"
	"testing"

	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestDeployerOverrides: what Argo CD's spec.source.kustomize and a Flux
// Kustomization's spec.images override is what pinbot renders and
// proves. The repository pins v1; each deployer overrides the image to
// v2, and the Pods run v2. A render that ignored the overrides would
// expect v1 and call them Mismatch.
func TestDeployerOverrides(t *testing.T) {
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
