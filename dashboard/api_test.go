package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeSource serves fixtureApps, with one app's forge down.
type fakeSource struct{ forgeDown bool }

func (f fakeSource) Apps(context.Context) ([]App, error) {
	apps := fixtureApps()
	for i := range apps {
		apps[i].Pulls = nil
	}
	return apps, nil
}

func (f fakeSource) App(_ context.Context, name string) (App, error) {
	for _, a := range fixtureApps() {
		if a.Name == name {
			if f.forgeDown {
				a.Pulls, a.Unavailable = nil, "pull requests: dial tcp gitea.test:443: connection refused"
			}
			return a, nil
		}
	}
	return App{}, fmt.Errorf("%w: %s", ErrNoApp, name)
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestAPI: the list and one app as JSON with camelCase keys, the per-Pod
// proof and the pull requests in the app's answer, and 404 as JSON.
func TestAPI(t *testing.T) {
	h := Handler(fakeSource{}, DefaultRefresh)
	code, body := get(t, h, APIPath)
	var list APIList
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Apps) != 3 {
		t.Fatalf("GET %s: %d %v\n%s", APIPath, code, err, body)
	}
	if a := list.Apps[0]; a.Name != "api" || !a.Verified || a.Proof != "Verified" || a.Containers != nil {
		t.Errorf("first app of the list: %+v, want api, Verified, without Pods", a)
	}
	if b := list.Apps[1]; b.Name != "billing" || b.Source != "argocd" || b.Sync != "Unknown" || b.Proof != "Pending" {
		t.Errorf("an app before its first pass: %+v", b)
	}
	code, body = get(t, h, APIPath+"/web")
	var web APIApp
	if err := json.Unmarshal([]byte(body), &web); code != 200 || err != nil {
		t.Fatalf("GET %s/web: %d %v\n%s", APIPath, code, err, body)
	}
	if len(web.Containers) != 2 || web.Containers[1].Verdict != "Mismatch" || len(web.Pulls) != 1 || len(web.History) != 1 {
		t.Errorf("web: %+v, want 2 Pods (one Mismatch), 1 pull request, 1 sync", web)
	}
	for _, key := range []string{`"runningDigest"`, `"gitDigest"`, `"healthReason"`} {
		if !strings.Contains(body, key) {
			t.Errorf("web's JSON has no key %s (camelCase):\n%s", key, body)
		}
	}
	if code, body = get(t, h, APIPath+"/nope"); code != 404 || !strings.Contains(body, `"error"`) {
		t.Errorf("GET %s/nope: %d %s, want 404 with a JSON error", APIPath, code, body)
	}
}

// TestPeerDownDegradesItsPart: with the forge down, the app's page still
// shows its status and Pods, and says once what is unavailable.
func TestPeerDownDegradesItsPart(t *testing.T) {
	h := Handler(fakeSource{forgeDown: true}, DefaultRefresh)
	code, page := get(t, h, "/apps/web")
	if code != 200 {
		t.Fatalf("GET /apps/web with the forge down: %d\n%s", code, page)
	}
	if n := strings.Count(page, "connection refused"); n != 1 {
		t.Errorf("the page names the forge's failure %d times, want once:\n%s", n, page)
	}
	if !strings.Contains(page, "web-2") {
		t.Errorf("the page lost the per-Pod proof when only the forge was down:\n%s", page)
	}
	_, body := get(t, h, APIPath+"/web")
	if !strings.Contains(body, `"unavailable": "pull requests: dial tcp`) {
		t.Errorf("the API does not say what is unavailable:\n%s", body)
	}
}
