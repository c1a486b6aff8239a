package cluster

import (
	"context"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/spoke"
)

// ArgoCD is the spoke dest names for an Application in namespace appNS,
// reached with the credentials of Argo CD's cluster Secret for it, read
// from the namespaces the operator's spoke.Trust names (Argo CD's own by
// default).
func (rs *Remotes) ArgoCD(ctx context.Context, appNS string, dest *deployer.Cluster) (*Cluster, error) {
	fail := func(err error) (*Cluster, error) {
		return nil, &Error{Cluster: dest.String(), Server: dest.Server, Err: err}
	}
	namespaces := rs.trust.SecretNamespaces(appNS)
	for _, ns := range namespaces {
		secrets, err := rs.list(ctx, ns)
		if err != nil {
			return fail(err)
		}
		for i := range secrets {
			s := &secrets[i]
			a, err := spoke.FromArgoCD(s.Data, rs.trust, nil)
			if err != nil {
				named := spoke.Cluster{Name: string(s.Data["name"]), Server: string(s.Data["server"])}
				if named.Names(dest.Server, dest.Name) {
					return fail(fmt.Errorf("Argo CD's cluster Secret %s/%s: %w", ns, s.Name, err))
				}
				continue
			}
			if !a.Names(dest.Server, dest.Name) {
				continue
			}
			c, err := rs.clients(ns+"/"+s.Name, s.ResourceVersion, s.Labels, a)
			if err != nil {
				return fail(err)
			}
			return c, nil
		}
	}
	return fail(fmt.Errorf("no Argo CD cluster Secret (label %s=%s) in the namespaces pinbot reads them from (%s) names it",
		spoke.ArgoCDSecretLabel, spoke.ArgoCDSecretType, strings.Join(namespaces, ", ")))
}

// Flux is the cluster a Flux Kustomization's kubeconfig Secret
// reaches: the Secret's key, or Flux's defaults "value" then
// "value.yaml".
func (rs *Remotes) Flux(ctx context.Context, kc *deployer.SecretKey) (*Cluster, error) {
	name := "kubeConfig " + kc.Namespace + "/" + kc.Name
	fail := func(err error) (*Cluster, error) { return nil, &Error{Cluster: name, Err: err} }
	s, err := rs.get(ctx, kc.Namespace, kc.Name)
	if err != nil {
		return fail(err)
	}
	keys := []string{kc.Key}
	if kc.Key == "" {
		keys = []string{"value", "value.yaml"}
	}
	var data []byte
	for _, k := range keys {
		if data = s.Data[k]; len(data) > 0 {
			break
		}
	}
	if len(data) == 0 {
		return fail(fmt.Errorf("Secret %s/%s has no key %s", kc.Namespace, kc.Name, strings.Join(keys, " or ")))
	}
	sc, err := spoke.FromKubeConfig(name, data, rs.trust)
	if err != nil {
		return fail(fmt.Errorf("Secret %s/%s: %w", kc.Namespace, kc.Name, err))
	}
	c, err := rs.clients(kc.Namespace+"/"+kc.Name, s.ResourceVersion, s.Labels, sc)
	if err != nil {
		return fail(err)
	}
	return c, nil
}
