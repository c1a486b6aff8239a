package deploy

// The requests TestDeployOnControlPlane asks the API server about.

// What pinbot does, each from the code that does it (see rbac.yaml).
var allowed = []access{
	{"create", "", "events", "", "web", "", "an Event on a workload it verified"},
	{"patch", "", "events", "", "argocd", "", "a repeated Event, aggregated (any namespace: verify-only apps too)"},
	{"get", "", "namespaces", "", "", stateNamespace, "History.Check: the state namespace exists before anything is applied"},
	{"get", "coordination.k8s.io", "leases", "", stateNamespace, "pinbot", "leader election reads the Lease"},
	{"create", "coordination.k8s.io", "leases", "", stateNamespace, "pinbot", "leader election creates the Lease"},
	{"update", "coordination.k8s.io", "leases", "", stateNamespace, "pinbot", "leader election renews, takes and releases the Lease"},
	{"get", "", "configmaps", "", stateNamespace, "pinbot-app-web", "the history is read at each pass"},
	{"create", "", "configmaps", "", stateNamespace, "pinbot-app-web", "the first sync creates the history"},
	{"update", "", "configmaps", "", stateNamespace, "pinbot-app-web", "the history is written with its resourceVersion"},
	{"list", "", "configmaps", "", stateNamespace, "", "the records of a shard's apps are read with one LIST as their loops start"},
	{"watch", "", "configmaps", "", stateNamespace, "", "the loop follows who wrote each record, and trusts its copy until another does"},
	{"create", "", "configmaps", "", stateNamespace, "pinbot-trigger", "a follower creates the trigger"},
	{"patch", "", "configmaps", "", stateNamespace, "pinbot-trigger", "a follower forwards a webhook by a merge patch"},
	{"list", "", "configmaps", "", stateNamespace, "pinbot-trigger", "the leader lists the trigger by name"},
	{"watch", "", "configmaps", "", stateNamespace, "pinbot-trigger", "the leader watches the trigger by name"},
	{"list", "", "nodes", "", "", "", "verification caches the Nodes' platforms"},
	{"watch", "", "nodes", "", "", "", "verification caches the Nodes' platforms"},
	{"list", "", "pods", "", "web", "", "verification caches the Pods of app namespaces"},
	{"watch", "", "pods", "", "web", "", "verification caches the Pods of app namespaces"},
	{"watch", "apps", "replicasets", "", "web", "", "verification finds a Deployment's current revision"},
	{"watch", "apps", "controllerrevisions", "", "web", "", "verification finds a StatefulSet's or DaemonSet's current revision"},
	{"list", "", "pods", "", "guestbook", "", "verify-only apps run in namespaces pinbot does not write"},
	{"get", "apps", "deployments", "", "guestbook", "", "verify-only apps' workloads"},
	{"list", "apps", "statefulsets", "", "guestbook", "", "verify-only apps' workloads"},
	{"watch", "apps", "daemonsets", "", "guestbook", "", "verify-only apps' workloads"},
	{"list", "batch", "jobs", "", "guestbook", "", "verify-only apps' workloads"},
	{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", "", "the dashboard asks whether the signed-in person may act"},
	{"create", "pinbot.dev", "proofs", "", "web", "", "an app's Proof, once"},
	{"patch", "pinbot.dev", "proofs", "status", "guestbook", "guestbook", "a Proof's status, applied when the proof changes (any app namespace: verify-only apps too)"},
	{"get", "", "secrets", "", stateNamespace, "pinbot-ledger-key", "the key that seals the ledgers"},
	{"get", "", "secrets", "", stateNamespace, "pinbot-records-key", "the key that seals the apps' records"},
	{"create", "", "secrets", "", stateNamespace, "", "makes the ledgers' key on its first start"},
	{"get", "", "secrets", "", stateNamespace, "pinbot-ledger-marks", "the newest version of each ledger pinbot wrote"},
	{"update", "", "secrets", "", stateNamespace, "pinbot-ledger-marks", "raises a ledger's mark after writing it"},
	{"get", "apps", "deployments", "", "web", "api", "the live object of a sync and its health"},
	{"list", "apps", "deployments", "", "web", "", "the app's inventory, by label"},
	{"watch", "apps", "deployments", "", "web", "", "the live caches of drift detection"},
}

// What a sync writes in an app namespace: granted by the overlay's
// RoleBinding of pinbot-apply, never by the base.
var appAccess = []access{
	{"create", "apps", "deployments", "", "web", "", "server-side apply creates an app's objects"},
	{"patch", "apps", "deployments", "", "web", "api", "server-side apply and heals patch them"},
	{"delete", "apps", "deployments", "", "web", "api", "prune, when the app sets prune: true"},
	{"patch", "", "services", "", "web", "api", "server-side apply"},
	{"patch", "", "configmaps", "", "web", "settings", "server-side apply"},
	{"patch", "", "secrets", "", "web", "api", "server-side apply of an app's Secret (say, from a secretGenerator)"},
	{"patch", "batch", "cronjobs", "", "web", "report", "server-side apply"},
	{"patch", "networking.k8s.io", "ingresses", "", "web", "api", "server-side apply"},
	{"patch", "policy", "poddisruptionbudgets", "", "web", "api", "server-side apply"},
	{"patch", "autoscaling", "horizontalpodautoscalers", "", "web", "api", "server-side apply"},
}

// What the docs say pinbot cannot do.
var denied = []access{
	{"list", "", "secrets", "", "", "", "read Secrets cluster-wide"},
	{"get", "", "secrets", "", stateNamespace, "pinbot-gitea", "read its own token through the API (it is mounted)"},
	{"list", "", "secrets", "", "kube-system", "", "read Secrets outside app namespaces"},
	{"create", "apps", "deployments", "", "default", "", "write outside app namespaces"},
	{"patch", "apps", "deployments", "", "kube-system", "coredns", "write outside app namespaces"},
	{"create", "", "configmaps", "", "default", "", "write outside app namespaces"},
	{"delete", "", "pods", "", "default", "x", "write outside app namespaces"},
	{"patch", "apps", "deployments", "", stateNamespace, "pinbot", "change its own Deployment"},
	{"delete", "coordination.k8s.io", "leases", "", stateNamespace, "pinbot", "delete the Lease"},
	{"patch", "coordination.k8s.io", "leases", "", stateNamespace, "pinbot", "patch the Lease (client-go updates it)"},
	{"get", "coordination.k8s.io", "leases", "", stateNamespace, "other", "read another Lease"},
	{"update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager", "take another component's Lease"},
	{"delete", "", "configmaps", "", stateNamespace, "pinbot-app-web", "delete a history"},
	{"patch", "", "configmaps", "", stateNamespace, "pinbot-config", "patch a ConfigMap but the trigger"},
	{"patch", "pinbot.dev", "proofs", "", "web", "web", "change a Proof's spec"},
	{"delete", "pinbot.dev", "proofs", "", "web", "web", "delete a Proof"},
	{"update", "", "secrets", "", stateNamespace, "pinbot-ledger-key", "replace the ledgers' key"},
	{"update", "", "secrets", "", stateNamespace, "pinbot-records-key", "replace the records' key"},
	{"delete", "", "secrets", "", stateNamespace, "pinbot-ledger-marks", "delete the ledgers' marks"},
	{"create", "", "secrets", "", "default", "", "create Secrets outside its namespace"},
	{"get", "", "namespaces", "", "", "kube-system", "read other Namespaces"},
	{"create", "", "namespaces", "", "", "", "create Namespaces"},
	{"delete", "", "namespaces", "", "", stateNamespace, "delete Namespaces"},
	{"patch", "", "nodes", "", "", "node-1", "write Nodes"},
	{"create", "", "pods", "exec", "web", "api-0", "exec into Pods, even in app namespaces"},
	{"create", "", "pods", "portforward", "web", "api-0", "port-forward to Pods"},
	{"create", "", "serviceaccounts", "token", "web", "default", "mint ServiceAccount tokens"},
	{"update", "apps", "deployments", "", "web", "api", "update (pinbot patches, through server-side apply)"},
	{"create", "rbac.authorization.k8s.io", "clusterroles", "", "", "", "create RBAC"},
	{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", "", "create RBAC"},
	{"create", "rbac.authorization.k8s.io", "rolebindings", "", "web", "", "create RBAC, even in app namespaces"},
	{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "pinbot-apply", "escalate RBAC"},
	{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", "cluster-admin", "bind RBAC"},
	{"impersonate", "", "users", "", "", "admin", "impersonate"},
	{"create", "apiextensions.k8s.io", "customresourcedefinitions", "", "", "", "install CRDs"},
	{"list", "", "events", "", "web", "", "read Events (pinbot writes them, never reads them)"},
}

// With the deployers component (and denied by the base alone).
var deployerReads = []access{
	{"get", "argoproj.io", "applications", "", "argocd", "guestbook", "a verify-only app reads its Application"},
	{"list", "argoproj.io", "applications", "", "argocd", "", "a verify-only app reads its Application"},
	{"watch", "argoproj.io", "applications", "", "argocd", "", "a verify-only app reads its Application"},
	{"get", "kustomize.toolkit.fluxcd.io", "kustomizations", "", "flux-system", "podinfo", "a verify-only app reads its Kustomization"},
	{"watch", "kustomize.toolkit.fluxcd.io", "kustomizations", "", "flux-system", "", "a verify-only app reads its Kustomization"},
	{"get", "source.toolkit.fluxcd.io", "gitrepositories", "", "flux-system", "podinfo", "and its GitRepository"},
	{"list", "source.toolkit.fluxcd.io", "gitrepositories", "", "flux-system", "", "and its GitRepository"},
	{"get", "helm.toolkit.fluxcd.io", "helmreleases", "", "flux-system", "podinfo", "a verify-only app reads its HelmRelease"},
	{"get", "source.toolkit.fluxcd.io", "helmrepositories", "", "flux-system", "podinfo", "and its HelmRepository"},
	{"get", "source.toolkit.fluxcd.io", "ocirepositories", "", "flux-system", "podinfo", "or its OCIRepository"},
}

// What the deployers component must not grant: pinbot never writes a
// deployer's objects, nor reads more of them.
var deployerDenied = []access{
	{"patch", "argoproj.io", "applications", "", "argocd", "guestbook", "write an Application (a sync or refresh)"},
	{"update", "argoproj.io", "applications", "", "argocd", "guestbook", "write an Application"},
	{"delete", "argoproj.io", "applications", "", "argocd", "guestbook", "delete an Application"},
	{"create", "argoproj.io", "applications", "", "argocd", "", "create an Application"},
	{"patch", "kustomize.toolkit.fluxcd.io", "kustomizations", "", "flux-system", "podinfo", "annotate a Kustomization (reconcile.fluxcd.io/requestedAt)"},
	{"patch", "source.toolkit.fluxcd.io", "gitrepositories", "", "flux-system", "podinfo", "write a GitRepository"},
	{"patch", "helm.toolkit.fluxcd.io", "helmreleases", "", "flux-system", "podinfo", "annotate a HelmRelease"},
	{"list", "argoproj.io", "appprojects", "", "argocd", "", "read Argo CD's AppProjects"},
	{"list", "", "secrets", "", "argocd", "", "read Argo CD's repository credentials"},
}
