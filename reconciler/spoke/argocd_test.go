package spoke

import (
	"errors"
	"strings"
	"testing"

	"pinbot.dev/pinbot/internal/redact"
)

func TestFromArgoCD(t *testing.T) {
	found := func(string) (string, error) { return "/usr/bin/x", nil }
	missing := func(string) (string, error) { return "", errors.New("not found") }
	gke := Trust{ArgoCDExec: []string{"gke-gcloud-auth-plugin"}}
	for _, tc := range []struct {
		name     string
		data     map[string]string
		lookPath func(string) (string, error)
		trust    *Trust // default DefaultTrust()
		check    func(t *testing.T, a Cluster)
		wantErr  string
	}{
		{name: "bearer token and CA", data: map[string]string{"name": "spoke", "server": "https://10.0.0.9:6443",
			"config": `{"bearerToken":"tok-123456789","tlsClientConfig":{"caData":"Y2EtcGVt","serverName":"spoke.internal"}}`},
			check: func(t *testing.T, a Cluster) {
				c := a.Config
				if a.Name != "spoke" || c.Host != "https://10.0.0.9:6443" || c.BearerToken != "tok-123456789" || string(c.CAData) != "ca-pem" || c.ServerName != "spoke.internal" {
					t.Errorf("config = %+v", c)
				}
				if got := redact.String("token tok-123456789"); strings.Contains(got, "tok-123456789") {
					t.Errorf("the token is not redacted: %s", got)
				}
			}},
		{name: "basic auth, insecure", data: map[string]string{"server": "https://spoke", "config": `{"username":"u","password":"pw-secret-1","tlsClientConfig":{"insecure":true}}`},
			check: func(t *testing.T, a Cluster) {
				if a.Config.Username != "u" || a.Config.Password != "pw-secret-1" || !a.Config.Insecure {
					t.Errorf("config = %+v", a.Config)
				}
			}},
		{name: "exec provider found", lookPath: found, trust: &gke, data: map[string]string{"server": "https://spoke", "config": `{"execProviderConfig":{"command":"gke-gcloud-auth-plugin","apiVersion":"client.authentication.k8s.io/v1beta1"}}`},
			check: func(t *testing.T, a Cluster) {
				if a.Config.ExecProvider == nil || a.Config.ExecProvider.Command != "gke-gcloud-auth-plugin" {
					t.Errorf("exec provider = %+v", a.Config.ExecProvider)
				}
			}},
		{name: "exec provider missing", lookPath: missing, trust: &gke, data: map[string]string{"server": "https://spoke", "config": `{"execProviderConfig":{"command":"gke-gcloud-auth-plugin"}}`},
			wantErr: `the command "gke-gcloud-auth-plugin" is not on pinbot's PATH`},
		{name: "exec provider not allowed", lookPath: found, data: map[string]string{"server": "https://spoke", "config": `{"execProviderConfig":{"command":"/bin/sh","args":["-c","touch /tmp/owned"]}}`},
			wantErr: `config.execProviderConfig.command: "/bin/sh" is not a command pinbot's operator allows; refused unless pinbot runs with --argocd-exec-allow=/bin/sh`},
		{name: "an allowed name does not allow a path to it", lookPath: found, trust: &gke, data: map[string]string{"server": "https://spoke", "config": `{"execProviderConfig":{"command":"/tmp/x/gke-gcloud-auth-plugin"}}`},
			wantErr: `"/tmp/x/gke-gcloud-auth-plugin" is not a command pinbot's operator allows`},
		{name: "exec provider's LD_PRELOAD", lookPath: found, trust: &gke, data: map[string]string{"server": "https://spoke", "config": `{"execProviderConfig":{"command":"gke-gcloud-auth-plugin","env":{"LD_PRELOAD":"/tmp/evil.so"}}}`},
			wantErr: `config.execProviderConfig.env.LD_PRELOAD: it would change what the command loads or runs; refused`},
		{name: "aws not allowed", lookPath: found, trust: &Trust{}, data: map[string]string{"server": "https://spoke", "config": `{"awsAuthConfig":{"clusterName":"prod"}}`},
			wantErr: `config.awsAuthConfig: it runs "argocd-k8s-auth", which pinbot's operator does not allow`},
		{name: "aws missing", lookPath: missing, data: map[string]string{"server": "https://spoke", "config": `{"awsAuthConfig":{"clusterName":"prod"}}`},
			wantErr: `"argocd-k8s-auth" is not on pinbot's PATH`},
		{name: "aws found", lookPath: found, data: map[string]string{"server": "https://spoke", "config": `{"awsAuthConfig":{"clusterName":"prod","roleARN":"arn:r"}}`},
			check: func(t *testing.T, a Cluster) {
				if e := a.Config.ExecProvider; e == nil || strings.Join(e.Args, " ") != "aws --cluster-name prod --role-arn arn:r" {
					t.Errorf("exec provider = %+v", e)
				}
			}},
		{name: "no server", data: map[string]string{"config": `{}`}, wantErr: "want the API server's URL"},
		{name: "bad config", data: map[string]string{"server": "https://spoke", "config": `{`}, wantErr: "not Argo CD's cluster config JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tc.data {
				data[k] = []byte(v)
			}
			trust := DefaultTrust()
			if tc.trust != nil {
				trust = *tc.trust
			}
			a, err := FromArgoCD(data, trust, tc.lookPath)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("FromArgoCD = %v, want an error with %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				tc.check(t, a)
			}
		})
	}
}

func TestNames(t *testing.T) {
	a := Cluster{Name: "prod", Server: "https://prod.example:6443/"}
	if !a.Names("https://prod.example:6443", "") || !a.Names("", "prod") || a.Names("https://other", "prod") || a.Names("", "") {
		t.Error("Names matches by server when given, else by name")
	}
}
