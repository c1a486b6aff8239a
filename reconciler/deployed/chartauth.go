package deployed

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/chartrepo"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// Argo CD's repository Secrets: one repository's credentials, and
// credential templates that serve every repository under their URL.
const (
	argoCDRepository = "repository"
	argoCDRepoCreds  = "repo-creds"
)

// ChartAuth reads the credentials of c's repository, when a fetch needs
// them: Flux's HelmRepository secretRef, or the Argo CD repository Secret
// whose url is the repository's (else the repo-creds template whose url
// is its longest prefix). Without a grant to list Argo CD's Secrets the
// repository is read anonymously, and a repository that needs
// credentials then answers 401, naming itself.
func (rd *Reader) ChartAuth(c *deployer.Chart) chartrepo.AuthFunc {
	return func(ctx context.Context) (chartrepo.Auth, error) {
		kube := rd.Kube
		if ref := c.SecretRef; ref != nil {
			s, err := kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return chartrepo.Auth{}, fmt.Errorf("the HelmRepository's secretRef %s/%s: %w", ref.Namespace, ref.Name, err)
			}
			return chartrepo.Auth{Username: string(s.Data["username"]), Password: string(s.Data["password"])}, nil
		}
		if c.ArgoCDNamespace == "" {
			return chartrepo.Auth{}, nil
		}
		list, err := kube.CoreV1().Secrets(c.ArgoCDNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "argocd.argoproj.io/secret-type in (" + argoCDRepository + "," + argoCDRepoCreds + ")",
		})
		switch {
		case apierrors.IsForbidden(err):
			return chartrepo.Auth{}, nil
		case err != nil:
			return chartrepo.Auth{}, fmt.Errorf("listing Argo CD's repository Secrets in %s: %w", c.ArgoCDNamespace, err)
		}
		want := strings.TrimSuffix(c.RepoURL, "/")
		var best chartrepo.Auth
		bestLen := -1
		for _, s := range list.Items {
			u := strings.TrimSuffix(string(s.Data["url"]), "/")
			a := chartrepo.Auth{Username: string(s.Data["username"]), Password: string(s.Data["password"])}
			switch s.Labels["argocd.argoproj.io/secret-type"] {
			case argoCDRepository:
				if u == want {
					return a, nil
				}
			case argoCDRepoCreds:
				if u != "" && strings.HasPrefix(want, u) && len(u) > bestLen {
					best, bestLen = a, len(u)
				}
			}
		}
		return best, nil
	}
}
