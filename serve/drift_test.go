package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
)

func TestDriftJobs(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("drift-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	apps := "apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"
	t.Setenv(gitforge.TokenEnv, "")
	for _, tc := range []struct {
		name, config string
		want         []string // repo and schedule of each job
		err          string
	}{
		{"drift and images", "forge: {url: 'http://127.0.0.1:3000', tokenFile: " + tokenFile + "}\n" + apps +
			"promote:\n  - {repo: platform/manifests, drift: '0 */6 * * *'}\n  - {repo: platform/other, images: [gitea.example/platform/web]}\n",
			[]string{"platform/manifests 0 */6 * * *"}, ""},
		{"no token", "forge: {url: 'http://127.0.0.1:3000'}\n" + apps + "promote:\n  - {repo: platform/manifests, drift: '@hourly'}\n",
			nil, "no Gitea token: set forge.tokenFile or $PINBOT_GITEA_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(write(strings.ReplaceAll(tc.name, " ", "-")+".yaml", tc.config))
			if err != nil {
				t.Fatal(err)
			}
			p, err := newPromoter(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := p.driftJobs(cfg, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range jobs {
				got = append(got, j.env.Repo.String()+" "+j.spec)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
		})
	}
}
