package pr

import "testing"

func TestPlan(t *testing.T) {
	planned := sampleMeta() // proposes d2/d3 on the current base
	pinned := Meta{Version: MetaVersion, Target: "prod", Images: planned.Images}
	proposal := planned
	proposal.Head = "head-sha"
	older := proposal
	older.Images = []ImageMeta{{Image: planned.Images[0].Image, Digest: d4, Source: SourceDigestFile}}
	fromDrift := proposal
	fromDrift.Images = []ImageMeta{{Image: planned.Images[0].Image, Digest: d4, Source: SourceDrift}}
	movedBase := proposal
	movedBase.Base = "another-base" // same pins proposed on an older base: still current
	otherLine := proposal
	otherLine.Changes = append([]ChangeRecord(nil), proposal.Changes...)
	otherLine.Changes[0].Line = 22
	pr, replaced := "head-sha", "someone-elses-push" // the open branch's heads
	always := func(*Meta) bool { return true }
	driftOnly := func(m *Meta) bool { return m != nil && m.Images[0].Source == SourceDrift }

	tests := []struct {
		name     string
		planned  Meta
		open     string // the open pull request's head; "" when none is open
		openMeta *Meta
		foreign  bool // opened by another account than pinbot's
		obsolete func(*Meta) bool
		want     Action
	}{
		{name: "already pinned, nothing open", planned: pinned, want: ActionNone},
		{name: "already pinned closes the open promotion", planned: pinned, open: pr, openMeta: &older, obsolete: always, want: ActionClose},
		{name: "already pinned closes an unreadable one too", planned: pinned, open: pr, obsolete: always, want: ActionClose},
		{name: "drift leaves a promotion open", planned: pinned, open: pr, openMeta: &older, obsolete: driftOnly, want: ActionLeave},
		{name: "drift closes its own", planned: pinned, open: pr, openMeta: &fromDrift, obsolete: driftOnly, want: ActionClose},
		{name: "new pull request", planned: planned, want: ActionPush},
		{name: "same proposal is kept", planned: planned, open: pr, openMeta: &proposal, obsolete: always, want: ActionKeep},
		{name: "same pins on a moved base are kept", planned: planned, open: pr, openMeta: &movedBase, obsolete: always, want: ActionKeep},
		{name: "newer digest", planned: planned, open: pr, openMeta: &older, obsolete: always, want: ActionPush},
		{name: "pins moved in the base", planned: planned, open: pr, openMeta: &otherLine, obsolete: always, want: ActionPush},
		{name: "text does not describe the head", planned: planned, open: replaced, openMeta: &proposal, obsolete: always, want: ActionPush},
		{name: "no hidden block", planned: planned, open: pr, obsolete: always, want: ActionPush},
		{name: "another account's pull request with pinbot's text is pushed over", planned: planned, open: pr, openMeta: &proposal, foreign: true, obsolete: always, want: ActionPush},
		{name: "another account's obsolete pull request is closed", planned: pinned, open: pr, openMeta: &older, foreign: true, obsolete: always, want: ActionClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obsolete := tc.obsolete
			if obsolete == nil {
				obsolete = func(*Meta) bool { t.Error("obsolete called without an open pull request"); return false }
			}
			var open *Open
			if tc.open != "" {
				open = &Open{Head: tc.open, Meta: tc.openMeta, Mine: !tc.foreign}
			}
			if got := Plan(tc.planned, open, obsolete); got != tc.want {
				t.Errorf("Plan = %s, want %s", got, tc.want)
			}
		})
	}
}
