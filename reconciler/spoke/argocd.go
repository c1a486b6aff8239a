// Package spoke turns the credentials other tools keep for a cluster
// into a client configuration pinbot can read Pods with: Argo CD's
// cluster Secrets (a hub Argo CD's spokes). It reads no cluster itself;
// the reconciler finds the Secret and builds the clients.
package spoke

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"pinbot.dev/pinbot/internal/redact"
)

// Argo CD's cluster Secrets: the label that marks them, and Argo CD's
// helper that signs EKS tokens for awsAuthConfig.
const (
	ArgoCDSecretLabel = "argocd.argoproj.io/secret-type"
	ArgoCDSecretType  = "cluster"
	argoCDAWSHelper   = "argocd-k8s-auth"
)

// Cluster is another cluster: its name and server,
// and how to reach it.
type Cluster struct {
	Name, Server string
	Config       *rest.Config
}

// argoConfig is the Secret's config key, Argo CD's ClusterConfig.
type argoConfig struct {
	Username        string `json:"username"`
	Password        string `json:"password"`
	BearerToken     string `json:"bearerToken"`
	TLSClientConfig struct {
		Insecure   bool   `json:"insecure"`
		ServerName string `json:"serverName"`
		CAData     []byte `json:"caData"`
		CertData   []byte `json:"certData"`
		KeyData    []byte `json:"keyData"`
	} `json:"tlsClientConfig"`
	AWSAuthConfig *struct {
		ClusterName string `json:"clusterName"`
		RoleARN     string `json:"roleARN"`
		Profile     string `json:"profile"`
	} `json:"awsAuthConfig"`
	ExecProviderConfig *struct {
		Command     string            `json:"command"`
		Args        []string          `json:"args"`
		Env         map[string]string `json:"env"`
		APIVersion  string            `json:"apiVersion"`
		InstallHint string            `json:"installHint"`
	} `json:"execProviderConfig"`
	ProxyURL string `json:"proxyUrl"`
}

// FromArgoCD reads an Argo CD cluster Secret's data (keys name, server,
// config). Its secrets (token, password, client key) are registered with
// package redact, so no error or log shows them. An execProviderConfig
// runs only a command t.ArgoCDExec lists, and awsAuthConfig only when it
// lists argocd-k8s-auth; any other is a *RefusedError. One whose binary
// lookPath cannot find is an error naming it; the cluster's apps are then
// Unknown, never verified.
func FromArgoCD(data map[string][]byte, t Trust, lookPath func(string) (string, error)) (Cluster, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	a := Cluster{Name: string(data["name"]), Server: strings.TrimSpace(string(data["server"]))}
	u, err := url.Parse(a.Server)
	if a.Server == "" || err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return Cluster{}, fmt.Errorf("server %q: want the API server's URL", redact.URL(a.Server))
	}
	var c argoConfig
	if raw := data["config"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return Cluster{}, fmt.Errorf("config: not Argo CD's cluster config JSON: %w", err)
		}
	}
	for _, s := range []string{c.BearerToken, c.Password, string(c.TLSClientConfig.KeyData)} {
		if s != "" {
			redact.Register(s)
		}
	}
	rc := &rest.Config{
		Host:        a.Server,
		Username:    c.Username,
		Password:    c.Password,
		BearerToken: c.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: c.TLSClientConfig.Insecure, ServerName: c.TLSClientConfig.ServerName,
			CAData: c.TLSClientConfig.CAData, CertData: c.TLSClientConfig.CertData, KeyData: c.TLSClientConfig.KeyData,
		},
	}
	if c.ProxyURL != "" {
		p, err := url.Parse(c.ProxyURL)
		if err != nil {
			return Cluster{}, fmt.Errorf("config.proxyUrl: %w", err)
		}
		rc.Proxy = func(*http.Request) (*url.URL, error) { return p, nil }
	}
	switch {
	case c.ExecProviderConfig != nil:
		e := c.ExecProviderConfig
		if !t.execAllowed(e.Command) {
			return Cluster{}, &RefusedError{Field: "config.execProviderConfig.command",
				Why: fmt.Sprintf("%q is not a command pinbot's operator allows", e.Command), Flag: "--argocd-exec-allow=" + e.Command}
		}
		for k := range e.Env {
			if unsafeEnv(k) {
				return Cluster{}, &RefusedError{Field: "config.execProviderConfig.env." + k, Why: "it would change what the command loads or runs"}
			}
		}
		if _, err := lookPath(e.Command); err != nil {
			return Cluster{}, fmt.Errorf("config.execProviderConfig: the command %q is not on pinbot's PATH (%s), so the cluster cannot be reached", e.Command, e.InstallHint)
		}
		ec := &clientcmdapi.ExecConfig{Command: e.Command, Args: e.Args, APIVersion: e.APIVersion, InstallHint: e.InstallHint, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		for k, v := range e.Env {
			ec.Env = append(ec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: v})
		}
		rc.ExecProvider = ec
	case c.AWSAuthConfig != nil:
		if !t.execAllowed(argoCDAWSHelper) {
			return Cluster{}, &RefusedError{Field: "config.awsAuthConfig", Why: fmt.Sprintf("it runs %q, which pinbot's operator does not allow", argoCDAWSHelper), Flag: "--argocd-exec-allow=" + argoCDAWSHelper}
		}
		if _, err := lookPath(argoCDAWSHelper); err != nil {
			return Cluster{}, fmt.Errorf("config.awsAuthConfig: Argo CD's EKS helper %q is not on pinbot's PATH, so the cluster cannot be reached", argoCDAWSHelper)
		}
		args := []string{"aws", "--cluster-name", c.AWSAuthConfig.ClusterName}
		if c.AWSAuthConfig.RoleARN != "" {
			args = append(args, "--role-arn", c.AWSAuthConfig.RoleARN)
		}
		if c.AWSAuthConfig.Profile != "" {
			args = append(args, "--profile", c.AWSAuthConfig.Profile)
		}
		rc.ExecProvider = &clientcmdapi.ExecConfig{Command: argoCDAWSHelper, Args: args, APIVersion: "client.authentication.k8s.io/v1beta1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}
	a.Config = rc
	return a, nil
}

// Names reports whether the Secret is the cluster an Argo CD destination
// names: by server URL when it gives one (a trailing "/" aside), else by
// name.
func (a Cluster) Names(server, name string) bool {
	if server != "" {
		return strings.TrimSuffix(a.Server, "/") == strings.TrimSuffix(server, "/")
	}
	return name != "" && a.Name == name
}
