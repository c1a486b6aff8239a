package spoke

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/redact"
)

// ArgoAPI reads an Application's live resources through Argo CD's API
// server, with an Argo CD account token that may only get applications:
// no credentials of the cluster the Application deploys to. It works
// through argocd-agent's resource proxy too.
//
// Only the live manifests are evidence: a Pod's status.containerStatuses
// come from the cluster as Argo CD reads it. The resource tree's images
// field comes from the Pod spec, and is never used.
type ArgoAPI struct {
	// URL is the API server's base URL, https://argocd.example.
	URL string
	// Token is the account token, sent as a bearer token.
	Token string
	// HTTP is the client; its transport bounds each request.
	HTTP *http.Client
}

// TreeNode is one resource of an Application's tree.
type TreeNode struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Tree lists the resources of Application app in namespace appNS, the
// managed ones and those they own (ReplicaSets, Pods).
func (a *ArgoAPI) Tree(ctx context.Context, app, appNS string) ([]TreeNode, error) {
	var tree struct {
		Nodes []TreeNode `json:"nodes"`
	}
	q := url.Values{"appNamespace": {appNS}}
	if err := a.get(ctx, "/api/v1/applications/"+url.PathEscape(app)+"/resource-tree", q, &tree); err != nil {
		return nil, fmt.Errorf("reading the resource tree of Application %s/%s: %w", appNS, app, err)
	}
	return tree.Nodes, nil
}

// Resource reads the live manifest of node, one resource of app's tree.
func (a *ArgoAPI) Resource(ctx context.Context, app, appNS string, node TreeNode) (*unstructured.Unstructured, error) {
	q := url.Values{"appNamespace": {appNS}, "namespace": {node.Namespace}, "resourceName": {node.Name},
		"group": {node.Group}, "version": {node.Version}, "kind": {node.Kind}}
	var res struct {
		Manifest string `json:"manifest"`
	}
	what := fmt.Sprintf("%s %s/%s of Application %s/%s", node.Kind, node.Namespace, node.Name, appNS, app)
	if err := a.get(ctx, "/api/v1/applications/"+url.PathEscape(app)+"/resource", q, &res); err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(res.Manifest)); err != nil {
		return nil, fmt.Errorf("reading %s: the manifest: %w", what, err)
	}
	return u, nil
}

// maxResponse bounds what one answer of the API server may be.
const maxResponse = 32 << 20

func (a *ArgoAPI) get(ctx context.Context, path string, q url.Values, out any) error {
	u := strings.TrimSuffix(a.URL, "/") + path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("Argo CD's API at %s: %w", redact.URL(a.URL), err)
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("Argo CD's API: %s", redact.String(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("Argo CD's API at %s: %w", redact.URL(a.URL), err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("Argo CD's API at %s: HTTP %d: %s", redact.URL(a.URL), resp.StatusCode, redact.String(e.Message))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("Argo CD's API at %s: %w", redact.URL(a.URL), err)
	}
	return nil
}
