package reconciler

import (
	"testing"
	"time"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
)

func TestMayPrune(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy bool
		forced bool // pinbot sync --prune
		mode   mode
		down   bool
		commit string
		want   bool
	}{
		{"policy on, loop", true, false, modeLoop, false, "c1", true},
		{"policy on, manual sync", true, false, modeSync, false, "c1", true},
		{"policy off", false, false, modeSync, false, "c1", false},
		{"policy off, sync --prune", false, true, modeSync, false, "c1", true},
		{"--prune applies to a manual sync only", false, true, modeLoop, false, "c1", false},
		{"a follow-up pass reuses the last render", true, false, modeFollow, false, "c1", false},
		{"source unreachable", true, false, modeLoop, true, "c1", false},
		{"not the commit last fetched", true, false, modeLoop, false, "c0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &config.App{Name: "web", SyncPolicy: config.SyncPolicy{Prune: tc.policy}}
			st := &appState{commit: "c1"}
			if tc.down {
				st.sourceDown = time.Unix(1, 0)
			}
			p := &pass{app: app, st: st, mode: tc.mode, prune: tc.forced, o: status.Observation{Commit: tc.commit}}
			if got := p.mayPrune(); got != tc.want {
				t.Errorf("mayPrune = %t, want %t", got, tc.want)
			}
		})
	}
}
