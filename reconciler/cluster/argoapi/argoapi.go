// Package argoapi reads what verification needs of an app's cluster
// through Argo CD's API server, for the apps pinbot reaches no other
// way: the Application's resource tree and each live manifest.
package argoapi

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/httpbound"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/internal/tokenfile"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/spoke"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Server is Argo CD's API server as pinbot's config names it.
type Server struct{ URL, TokenFile, CAFile string }

// Access reads what verification needs of an app's cluster through
// Argo CD's API server, for the apps pinbot reaches no other way.
type Access struct {
	settings func() *Server // the config's argocd:, as it is now
	mirrors  []verdict.Mirror
	http     func() (*http.Client, error) // made once (newHTTP)
}

// New reads through the server settings names (nil for none),
// each answer bounded by answer, mapping images through mirrors.
func New(settings func() *Server, answer time.Duration, mirrors []verdict.Mirror) *Access {
	a := &Access{settings: settings, mirrors: mirrors}
	a.http = sync.OnceValues(func() (*http.Client, error) { return a.newHTTP(answer) })
	return a
}

// API is the client of Argo CD's API server the config's argocd: names.
// The token is read anew each time, so a rotated one is used at the next
// pass; the HTTP client, and its connections, are made once.
func (a *Access) API() (*spoke.ArgoAPI, error) {
	s := a.settings()
	if s == nil || s.URL == "" {
		return nil, fmt.Errorf("reading Pods through Argo CD's API: no argocd.url in the config")
	}
	hc, err := a.http()
	if err != nil {
		return nil, err
	}
	token, err := tokenfile.Read(s.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("Argo CD's API: %w", err)
	}
	redact.Register(token)
	return &spoke.ArgoAPI{URL: s.URL, Token: token, HTTP: hc}, nil
}

// newHTTP is the client of Argo CD's API server: bounded as the spokes'
// clients are, trusting the config's caFile.
func (a *Access) newHTTP(answer time.Duration) (*http.Client, error) {
	t := httpbound.Transport(answer)
	if s := a.settings(); s != nil && s.CAFile != "" {
		pool, err := capool.Load(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("Argo CD's API: %w", err)
		}
		t.TLSClientConfig = capool.TLS(pool)
	}
	return &http.Client{Transport: t}, nil
}

// apiReader reads one Application's live resources through Argo CD's API.
type apiReader struct {
	api     *spoke.ArgoAPI
	app, ns string // the Application
	nodes   map[object.Ref]spoke.TreeNode
}

// Snapshot is what verification reads of desired, in namespaces,
// when Argo CD's API server is the only way to the cluster: the live
// workloads, and the Pods, ReplicaSets and ControllerRevisions of the
// Application's resource tree, each as its live manifest. Argo CD serves
// no Nodes: a Pod's platform is what it demands of its Node (see
// verdict.Snapshot.NodesUnread). It returns the confirm that reads the
// workloads again.
func (a *Access) Snapshot(ctx context.Context, api *spoke.ArgoAPI, app, appNS string, namespaces []string, desired []*unstructured.Unstructured, want map[object.Ref]*unstructured.Unstructured) (*verdict.Snapshot, func(context.Context, *verdict.Snapshot) (string, bool), error) {
	nodes, err := api.Tree(ctx, app, appNS)
	if err != nil {
		return nil, nil, err
	}
	rd := &apiReader{api: api, app: app, ns: appNS, nodes: map[object.Ref]spoke.TreeNode{}}
	for _, n := range nodes {
		rd.nodes[object.Ref{Group: n.Group, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}] = n
	}
	snap := &verdict.Snapshot{Desired: desired, Live: map[object.Ref]*unstructured.Unstructured{}, Mirrors: a.mirrors, NodesUnread: true}
	if err := rd.read(ctx, want, snap.Live); err != nil {
		return nil, nil, err
	}
	inNS := map[string]bool{}
	for _, ns := range namespaces {
		inNS[ns] = true
	}
	for ref := range rd.nodes {
		if !inNS[ref.Namespace] {
			continue
		}
		var into any
		switch ref.Group + "/" + ref.Kind {
		case "/Pod":
			p := &corev1.Pod{}
			snap.Pods, into = append(snap.Pods, p), p
		case "apps/ReplicaSet":
			rs := &appsv1.ReplicaSet{}
			snap.ReplicaSets, into = append(snap.ReplicaSets, rs), rs
		case "apps/ControllerRevision":
			cr := &appsv1.ControllerRevision{}
			snap.Revisions, into = append(snap.Revisions, cr), cr
		default:
			continue
		}
		u, err := api.Resource(ctx, app, appNS, rd.nodes[ref])
		if err != nil {
			return nil, nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			return nil, nil, fmt.Errorf("reading %s through Argo CD's API: %w", ref, err)
		}
	}
	sort.Slice(snap.Pods, func(i, j int) bool {
		return snap.Pods[i].Namespace+"/"+snap.Pods[i].Name < snap.Pods[j].Namespace+"/"+snap.Pods[j].Name
	})
	confirm := func(ctx context.Context, snap *verdict.Snapshot) (string, bool) {
		return verdict.Confirm(ctx, snap, rd.read)
	}
	return snap, confirm, nil
}

// read reads each object of want the Application's tree holds into live;
// one it does not hold is missing.
func (rd *apiReader) read(ctx context.Context, want, live map[object.Ref]*unstructured.Unstructured) error {
	for ref := range want {
		n, ok := rd.nodes[ref]
		if !ok {
			continue
		}
		u, err := rd.api.Resource(ctx, rd.app, rd.ns, n)
		if err != nil {
			return err
		}
		live[ref] = u
	}
	return nil
}
