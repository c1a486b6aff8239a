package pr

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCompareBuilds(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	const d1, d2 = "sha256:1111", "sha256:2222"
	type result struct {
		Order Order
		By    string
	}
	for _, tc := range []struct {
		name string
		a, b Build
		want result
	}{
		{"same digest", Build{Digest: d1, Tags: []string{"1"}}, Build{Digest: d1, Tags: []string{"2"}}, result{OrderSame, "digest"}},
		{"build numbers", Build{Digest: d1, Tags: []string{"42"}}, Build{Digest: d2, Tags: []string{"43"}}, result{OrderOlder, "tag"}},
		{"numbers, not strings", Build{Digest: d1, Tags: []string{"100"}}, Build{Digest: d2, Tags: []string{"99"}}, result{OrderNewer, "tag"}},
		{"semver with v", Build{Digest: d1, Tags: []string{"v1.10.0"}}, Build{Digest: d2, Tags: []string{"v1.9.3"}}, result{OrderNewer, "tag"}},
		{"prerelease before release", Build{Digest: d1, Tags: []string{"2.0.0-rc.1"}}, Build{Digest: d2, Tags: []string{"2.0.0"}}, result{OrderOlder, "tag"}},
		{"highest version tag counts", Build{Digest: d1, Tags: []string{"latest", "1.2", "1.3"}}, Build{Digest: d2, Tags: []string{"1.2.9"}}, result{OrderNewer, "tag"}},
		{"tag wins over created", Build{Digest: d1, Tags: []string{"42"}, Created: day(9)}, Build{Digest: d2, Tags: []string{"43"}, Created: day(1)}, result{OrderOlder, "tag"}},
		{"no version tag: created", Build{Digest: d1, Tags: []string{"main"}, Created: day(1)}, Build{Digest: d2, Tags: []string{"main"}, Created: day(2)}, result{OrderOlder, "created"}},
		{"one side without version: created", Build{Digest: d1, Tags: []string{"43"}, Created: day(1)}, Build{Digest: d2, Created: day(2)}, result{OrderOlder, "created"}},
		{"epoch orders nothing", Build{Digest: d1, Created: time.Unix(0, 0)}, Build{Digest: d2, Created: day(2)}, result{OrderUnknown, ""}},
		{"revision build numbers", Build{Digest: d1, Revision: "1207"}, Build{Digest: d2, Revision: "1199"}, result{OrderNewer, "revision"}},
		{"commit hashes order nothing", Build{Digest: d1, Revision: "c0ffee1"}, Build{Digest: d2, Revision: "deadbee"}, result{OrderUnknown, ""}},
		{"sha tags order nothing", Build{Digest: d1, Tags: []string{"sha-1a2b3c"}}, Build{Digest: d2, Tags: []string{"sha-4d5e6f"}}, result{OrderUnknown, ""}},
		{"equal created", Build{Digest: d1, Created: day(3)}, Build{Digest: d2, Created: day(3)}, result{OrderSame, "created"}},
		{"nothing known", Build{Digest: d1}, Build{Digest: d2}, result{OrderUnknown, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, by := CompareBuilds(tc.a, tc.b)
			if diff := cmp.Diff(tc.want, result{o, by}); diff != "" {
				t.Errorf("CompareBuilds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSuperseded(t *testing.T) {
	b42 := Build{Digest: "sha256:42", Tags: []string{"42"}}
	base := func(b Build) Superseding { return Superseding{Build: b, Where: "the base branch main"} }
	pr := func(b Build) Superseding { return Superseding{Build: b, Where: "pull request #7"} }
	for _, tc := range []struct {
		name    string
		current []Superseding
		want    Superseding
		older   bool
	}{
		{"nothing pinned", nil, Superseding{}, false},
		{"base pins an older build", []Superseding{base(Build{Digest: "sha256:41", Tags: []string{"41"}})}, Superseding{}, false},
		{"base pins a newer build", []Superseding{base(Build{Digest: "sha256:43", Tags: []string{"43"}})},
			Superseding{Build: Build{Digest: "sha256:43", Tags: []string{"43"}}, Where: "the base branch main", By: "tag"}, true},
		{"pull request proposes a newer build", []Superseding{
			base(Build{Digest: "sha256:41", Tags: []string{"41"}}),
			pr(Build{Digest: "sha256:43", Tags: []string{"43"}}),
		}, Superseding{Build: Build{Digest: "sha256:43", Tags: []string{"43"}}, Where: "pull request #7", By: "tag"}, true},
		{"unordered builds do not hold it back", []Superseding{base(Build{Digest: "sha256:ab", Tags: []string{"main"}})}, Superseding{}, false},
		{"same build", []Superseding{pr(b42)}, Superseding{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, older := Superseded(b42, tc.current)
			if older != tc.older {
				t.Errorf("Superseded = %v, want %v", older, tc.older)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Superseded newer build (-want +got):\n%s", diff)
			}
		})
	}
}
