package deployer

import "k8s.io/apimachinery/pkg/runtime/schema"

// The deployers' resources pinbot reads: Argo CD's Applications, and
// Flux's Kustomizations, HelmReleases and their sources.
var (
	ApplicationsResource     = schema.GroupVersionResource{Group: ArgoCDGroup, Version: "v1alpha1", Resource: "applications"}
	KustomizationsResource   = schema.GroupVersionResource{Group: KustomizeGroup, Version: "v1", Resource: "kustomizations"}
	GitRepositoriesResource  = schema.GroupVersionResource{Group: SourceGroup, Version: "v1", Resource: "gitrepositories"}
	HelmReleasesResource     = schema.GroupVersionResource{Group: HelmGroup, Version: "v2", Resource: "helmreleases"}
	HelmRepositoriesResource = schema.GroupVersionResource{Group: SourceGroup, Version: "v1", Resource: "helmrepositories"}
	OCIRepositoriesResource  = schema.GroupVersionResource{Group: SourceGroup, Version: "v1", Resource: "ocirepositories"}
)

// IsDeployment reports whether resource is one whose status says what a
// deployer deployed: an Application, a Kustomization or a HelmRelease.
func IsDeployment(resource schema.GroupVersionResource) bool {
	return resource == ApplicationsResource || resource == KustomizationsResource || resource == HelmReleasesResource
}
