// Package notify sends what pinbot decides and proves to chat and to
// other tools, as Argo CD Notifications and Flux's notification-controller
// do: a JSON webhook signed with HMAC-SHA256, or a Slack-compatible
// incoming webhook (Slack, Mattermost, Rocket.Chat), chosen per target by
// the event's reason and environment.
//
// Sending never holds pinbot up: each target has a bounded queue and its
// own sender, which retries a failed delivery with backoff; an event that
// finds the queue full is dropped and counted.
package notify

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/internal/redact"
)

// Formats of a target.
const (
	// FormatJSON posts the Event as JSON, signed in the header
	// X-Pinbot-Signature-256 ("sha256=" and the hex HMAC-SHA256 of the
	// body with the target's secret) when it has one.
	FormatJSON = "json"
	// FormatSlack posts {"text": …}, as Slack's incoming webhooks and
	// those compatible with them take it.
	FormatSlack = "slack"
)

// Target is one entry of serve's notify: section: where events go, and
// which.
type Target struct {
	// Name names the target in logs and metrics.
	Name string `yaml:"name"`
	// URL is where events are posted. A Slack webhook's URL is its
	// secret: give it in URLFile instead.
	URL string `yaml:"url"`
	// URLFile is a file holding the URL (a mounted Secret).
	URLFile string `yaml:"urlFile"`
	// Format is json (default) or slack.
	Format string `yaml:"format"`
	// SecretFile holds the key of the json format's HMAC-SHA256
	// signature; none, unsigned.
	SecretFile string `yaml:"secretFile"`
	// Reasons are the events sent, by reason (Verified, Mismatch, Held,
	// RollbackOpened, ...); empty, every one.
	Reasons []string `yaml:"reasons"`
	// Envs are the environments whose events are sent (an app's proof
	// counts for the environments it is in); empty, every one, and the
	// events of apps in none.
	Envs []string `yaml:"envs"`
	// WarningsOnly sends only bad news: Mismatch, Held, a rollback, ...
	WarningsOnly bool `yaml:"warningsOnly"`
	// Insecure allows a plain-HTTP URL whose host is not loopback: the
	// events, and a Slack URL's secret path, then cross the network in
	// clear.
	Insecure bool `yaml:"insecure"`

	url, secret string // read by Open
	line        int
}

// SetLine records the entry's line in the config file, for errors.
func (t *Target) SetLine(n int) { t.line = n }

// Line is the entry's line in the config file, 0 when unknown.
func (t *Target) Line() int { return t.line }

// Problems lists what is wrong with the entry, without reading its files.
func (t *Target) Problems() []string {
	var out []string
	if t.Name == "" {
		out = append(out, "name: want a name, for logs and metrics")
	}
	switch {
	case t.URL != "" && t.URLFile != "":
		out = append(out, "url and urlFile: give one")
	case t.URL == "" && t.URLFile == "":
		out = append(out, "want url or urlFile")
	case t.URL != "":
		if err := checkURL(t.URL, t.Insecure); err != nil {
			out = append(out, "url: "+err.Error())
		}
	}
	switch t.Format {
	case "", FormatJSON:
	case FormatSlack:
		if t.SecretFile != "" {
			out = append(out, "secretFile: the slack format is not signed (its URL is the secret)")
		}
	default:
		out = append(out, fmt.Sprintf("format %s: want json or slack", clip.Quote(t.Format)))
	}
	return out
}

// Resolve makes the entry's files absolute, relative to dir (the config
// file's directory).
func (t *Target) Resolve(dir string) {
	for _, p := range []*string{&t.URLFile, &t.SecretFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// open reads the entry's files.
func (t *Target) open() error {
	t.url = t.URL
	if t.URLFile != "" {
		b, err := opfile.Read(t.URLFile, 4096)
		if err != nil {
			return fmt.Errorf("notify %s: urlFile: %w", t.Name, err)
		}
		t.url = strings.TrimSpace(string(b))
		if err := checkURL(t.url, t.Insecure); err != nil {
			return fmt.Errorf("notify %s: the URL in %s: %w", t.Name, t.URLFile, err)
		}
		redact.Register(t.url)
	}
	if t.SecretFile != "" {
		b, err := os.ReadFile(t.SecretFile)
		if err != nil {
			return fmt.Errorf("notify %s: secretFile: %w", t.Name, err)
		}
		if t.secret = strings.TrimSpace(string(b)); t.secret == "" {
			return fmt.Errorf("notify %s: secretFile %s is empty", t.Name, t.SecretFile)
		}
		redact.Register(t.secret)
	}
	return nil
}

// wants says whether the target sends e.
func (t *Target) wants(e Event) bool {
	if t.WarningsOnly && e.Type != Warning {
		return false
	}
	if len(t.Reasons) > 0 && !slices.Contains(t.Reasons, e.Reason) {
		return false
	}
	if len(t.Envs) > 0 && !slices.ContainsFunc(e.Envs, func(env string) bool { return slices.Contains(t.Envs, env) }) {
		return false
	}
	return true
}

// checkURL wants an https URL, or an http one to loopback (any host with
// insecure).
func checkURL(s string, insecure bool) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%s: want an http or https URL", clip.Quote(redact.URL(s)))
	case loopback.Cleartext(u) && !insecure:
		return fmt.Errorf("%s: plain HTTP to a host that is not loopback (insecure: true allows it)", clip.Quote(redact.URL(s)))
	}
	return nil
}

// Event types, as a Kubernetes Event's.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// Event is one thing pinbot decided or proved, as a json target receives
// it.
type Event struct {
	At     time.Time `json:"at"`
	Type   string    `json:"type"`   // Normal or Warning
	Reason string    `json:"reason"` // Verified, Mismatch, Held, RollbackOpened, ...
	// Repo is the manifest repository of a release chain's decision.
	Repo string `json:"repo,omitempty"`
	// Envs are the environments the event is about: the decision's, or
	// those the app is in.
	Envs  []string `json:"envs,omitempty"`
	App   string   `json:"app,omitempty"`
	Image string   `json:"image,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message"`
}

// slackEscape escapes what Slack's message markup reads in text: &, <
// and >, so that a message cannot mention @channel (<!channel>) or show a
// link under another name (<https://evil|the runbook>).
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// text is e for a chat message; every part that comes from elsewhere (an
// app's, a repository's name, a reason typed by a person) is escaped.
func (e Event) text() string {
	icon := ":white_check_mark:"
	if e.Type == Warning {
		icon = ":warning:"
	}
	var where []string
	if e.App != "" {
		where = append(where, "app "+e.App)
	}
	if len(e.Envs) > 0 {
		where = append(where, strings.Join(e.Envs, ", "))
	}
	if e.Repo != "" {
		where = append(where, e.Repo)
	}
	s := fmt.Sprintf("%s *pinbot: %s*", icon, slackEscape.Replace(e.Reason))
	if len(where) > 0 {
		s += " (" + slackEscape.Replace(strings.Join(where, ", ")) + ")"
	}
	return s + "\n" + slackEscape.Replace(e.Message)
}
