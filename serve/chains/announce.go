package chains

import (
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/notify"
)

// announce counts the ledger's events newer than the last it announced
// for repo (this step's decisions, and what a person did between steps,
// such as lifting a hold), once written, and writes each as a Kubernetes
// Event on the objects of the apps of its environment (of every
// environment, for one of the whole chain).
func (rl *Runner) announce(repo string, chain release.Chain, l *release.Ledger) {
	events := l.Events
	rl.mu.Lock()
	since := rl.announced[repo]
	if n := len(events); n > 0 && events[n-1].At.After(since) {
		rl.announced[repo] = events[n-1].At
	}
	rl.mu.Unlock()
	for _, e := range events {
		if !e.At.After(since) {
			continue
		}
		rl.decisions.WithLabelValues(repo, e.Env, e.Reason).Inc()
		rl.chainm.Observe(repo, chain, l, e)
		if rl.observe != nil {
			rl.observe(repo, chain, l, e, rl.now())
		}
		var apps []string
		if env, ok := chain.Get(e.Env); ok {
			apps = env.Apps
		} else {
			for _, env := range chain {
				apps = append(apps, env.Apps...)
			}
		}
		msg := e.What
		if e.Image != "" {
			msg = e.Image + ": " + msg
		}
		for _, app := range apps {
			rl.deps.Event(app, release.Warning(e.Reason), e.Reason, msg)
		}
		n := notify.Event{At: e.At, Type: notify.Normal, Reason: e.Reason, Repo: repo, Image: e.Image, Message: e.What}
		if release.Warning(e.Reason) {
			n.Type = notify.Warning
		}
		if e.Env != "" {
			n.Envs = []string{e.Env}
		}
		rl.deps.Notify.Send(n)
	}
}
