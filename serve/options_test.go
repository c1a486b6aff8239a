package serve

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidateNamesTheFlag(t *testing.T) {
	good := func() Options {
		return Options{Listen: ":8080", Dashboard: true, ShutdownTimeout: time.Minute, ReleaseInterval: time.Minute,
			Lease: Lease{Duration: 35 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second}}
	}
	o := good()
	if err := o.Validate(); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Listen = "" }, "flag --listen: required"},
		{func(o *Options) { o.Dashboard, o.Listen, o.WebhookListen = false, "", ":8081" }, "flag --webhook-listen: needs --listen"},
		{func(o *Options) { o.Dashboard, o.Listen, o.GateToken = false, "", []byte("t") }, "flag --gate-token-file: the gate endpoint needs --listen"},
		{func(o *Options) { o.Shards = -1 }, "flag --shards: want 0"},
		{func(o *Options) { o.Shards = 2 }, "flag --shards: needs --leader-elect"},
		{func(o *Options) { o.ShutdownTimeout = 0 }, "flag --shutdown-timeout"},
		{func(o *Options) { o.ReleaseInterval = 0 }, "flag --release-interval"},
		{func(o *Options) { o.Elect, o.Lease.RetryPeriod = true, 0 }, "flag --retry-period"},
	} {
		o := good()
		tc.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", o, err, tc.want)
		}
	}
}
