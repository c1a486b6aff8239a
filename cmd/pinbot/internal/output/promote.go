package output

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
)

// Tracked is a tracked tag in drift -o json.
type Tracked struct {
	Image   string   `json:"image"`
	Tag     string   `json:"tag"`
	Digest  string   `json:"digest"`
	Age     string   `json:"age,omitempty"`
	Targets []string `json:"targets"`
}

// Failure is a drift failure in drift -o json.
type Failure struct {
	Image  string `json:"image,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Branch string `json:"branch,omitempty"`
	Error  string `json:"error"`
	// Refused is the signature policy's refusal, when that is what
	// failed: the image, digest, rule and reason, as promote -o json
	// gives them.
	Refused *trust.Refusal `json:"refused,omitempty"`
	// Gate is the release chain's refusal (held, not proven, frozen).
	Gate *release.Refusal `json:"gate,omitempty"`
}

func driftJSON(w io.Writer, rep promote.DriftReport, withText bool) error {
	tracked := func(ts []promote.Tracked) []Tracked {
		out := []Tracked{}
		for _, t := range ts {
			j := Tracked{Image: t.Image, Tag: t.Tag, Digest: t.Digest, Targets: t.Targets}
			if t.AgeKnown {
				j.Age = t.Age.Round(time.Second).String()
			}
			out = append(out, j)
		}
		return out
	}
	out := struct {
		Checked int       `json:"checked"`
		Moved   []Tracked `json:"moved"`
		Held    []Tracked `json:"held"`
		Failed  []Failure `json:"failed"`
		Results []Result  `json:"results"`
		Summary string    `json:"summary"`
	}{Checked: rep.Checked, Moved: tracked(rep.Moved), Held: tracked(rep.Held), Failed: []Failure{}, Results: []Result{}, Summary: rep.Summary()}
	for _, f := range rep.Failed {
		j := Failure{Image: f.Image, Tag: f.Tag, Branch: f.Branch, Error: redact.String(f.Error())}
		var refusal *trust.Refusal
		if errors.As(f.Err, &refusal) {
			j.Refused = refusal
		}
		var gated *release.Refusal
		if errors.As(f.Err, &gated) {
			j.Gate = gated
		}
		out.Failed = append(out.Failed, j)
	}
	for _, r := range rep.Results {
		out.Results = append(out.Results, result(r, withText))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func driftText(w io.Writer, rep promote.DriftReport) error {
	for _, r := range rep.Results {
		line := fmt.Sprintf("%-14s %s", r.Status, r.Branch)
		switch {
		case r.Closed != nil:
			line += fmt.Sprintf(" (closed obsolete #%d)", r.Closed.Number)
		case r.Pull != nil:
			line += " " + r.Pull.URL
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
		if r.Status == promote.StatusDryRun {
			if _, err := fmt.Fprintf(w, "%s\n", r.Diff); err != nil {
				return err
			}
		}
		for _, n := range r.Notes {
			if _, err := fmt.Fprintf(w, "  note: %s\n", n); err != nil {
				return err
			}
		}
	}
	for _, h := range rep.Held {
		age := "unknown age"
		if h.AgeKnown {
			age = h.Age.Round(time.Second).String() + " old"
		}
		if _, err := fmt.Fprintf(w, "%-14s %s:%s -> %s (%s)\n", "held", h.Image, h.Tag, imageref.Short(h.Digest), age); err != nil {
			return err
		}
	}
	for _, f := range rep.Failed {
		if _, err := fmt.Fprintf(w, "%-14s %s\n", "failed", redact.String(f.Error())); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, rep.Summary())
	return err
}

// Result is one branch's outcome in `-o json`.
type Result struct {
	PRNumber int64             `json:"prNumber,omitempty"`
	PRURL    string            `json:"prURL,omitempty"`
	Branch   string            `json:"branch"`
	Changes  []pr.ChangeRecord `json:"changes"`
	Digest   string            `json:"digest,omitempty"`
	Image    string            `json:"image,omitempty"`
	Tag      string            `json:"tag,omitempty"`
	Images   []pr.ImageMeta    `json:"images,omitempty"`
	Target   string            `json:"target"`
	Status   promote.Status    `json:"status"`
	Closed   int64             `json:"closedPRNumber,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
	// Signatures are, per image, who signed the digest and how it was
	// built, as the signature policy found it.
	Signatures map[string]policy.Provenance `json:"signatures,omitempty"`
	Diff       string                       `json:"diff,omitempty"`
	Body       string                       `json:"body,omitempty"`
}

func result(r promote.Result, withText bool) Result {
	out := Result{Branch: r.Branch, Changes: r.Meta.Changes, Target: r.Target, Status: r.Status, Notes: r.Notes, Signatures: r.Signatures}
	if out.Changes == nil {
		out.Changes = []pr.ChangeRecord{}
	}
	if len(r.Meta.Images) == 1 {
		im := r.Meta.Images[0]
		out.Image, out.Digest, out.Tag = im.Image, im.Digest, im.Tag
	} else {
		out.Images = r.Meta.Images
	}
	if r.Pull != nil {
		out.PRNumber, out.PRURL = r.Pull.Number, r.Pull.URL
	}
	if r.Closed != nil {
		out.Closed = r.Closed.Number
	}
	if withText {
		out.Diff, out.Body = r.Diff, r.Body
	}
	return out
}

// PromoteJSON writes one JSON document: the target's object, or an
// array of them when the promotion had several targets.
func PromoteJSON(w io.Writer, results []promote.Result, withText bool) error {
	enc := json.NewEncoder(w)
	if len(results) == 1 {
		return enc.Encode(result(results[0], withText))
	}
	out := make([]Result, 0, len(results))
	for _, r := range results {
		out = append(out, result(r, withText))
	}
	return enc.Encode(out)
}

// PromoteText prints the pull request URL of each target; a dry run
// prints the diff and the body, and a no-op says "already pinned".
func PromoteText(w io.Writer, results []promote.Result) error {
	for _, r := range results {
		var err error
		switch {
		case r.Status == promote.StatusDryRun:
			_, err = fmt.Fprintf(w, "# dry run: branch %s (target %s)\n%s\n%s\n", r.Branch, r.Target, r.Diff, r.Body)
		case r.Status == promote.StatusAlreadyPinned:
			msg := fmt.Sprintf("already pinned: %s in target %s", pr.DescribeImages(r.Meta.Images), r.Target)
			if r.Closed != nil {
				msg += fmt.Sprintf("; closed obsolete pull request #%d", r.Closed.Number)
			}
			_, err = fmt.Fprintln(w, msg)
		case r.Pull != nil:
			_, err = fmt.Fprintln(w, r.Pull.URL)
		default:
			_, err = fmt.Fprintf(w, "%s: branch %s (target %s)\n", r.Status, r.Branch, r.Target)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Drift prints one drift run: under asJSON its document (with each pull
// request's text when withText), else its summary and failures.
func Drift(w io.Writer, asJSON, withText bool, rep promote.DriftReport) error {
	if asJSON {
		return driftJSON(w, rep, withText)
	}
	return driftText(w, rep)
}
