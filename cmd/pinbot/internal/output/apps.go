package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Statuses prints one line per app and, under it, why it is not
// Synced, Healthy and Verified.
func Statuses(w io.Writer, statuses []*status.App) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tSOURCE\tCOMMIT\tSYNC\tHEALTH\tVERIFIED\tDEPLOYED COMMIT\tAUTOMATED")
	for _, s := range statuses {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%t\n", s.App, orDash(s.Source), orDash(commitid.Short(s.Commit)), s.Sync, s.Health,
			s.Verified, orDash(commitid.Short(s.DeployedCommit)), s.Automated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range statuses {
		if s.Error != "" {
			fmt.Fprintf(w, "%s: error: %s\n", s.App, s.Error)
		}
		if len(s.OutOfSync) > 0 {
			fmt.Fprintf(w, "%s: out of sync: %s", s.App, s.OutOfSync[0])
			if n := len(s.OutOfSync) - 1; n > 0 {
				fmt.Fprintf(w, " and %d more", n)
			}
			fmt.Fprintln(w)
		}
		for _, d := range s.Drift {
			fmt.Fprintf(w, "%s: field out of sync: %s\n", s.App, d)
		}
		for _, o := range s.Orphaned {
			fmt.Fprintf(w, "%s: orphaned (in the cluster, no longer in Git): %s\n", s.App, o)
		}
		if s.HealthReason != "" {
			fmt.Fprintf(w, "%s: %s: %s\n", s.App, s.Health, s.HealthReason)
		}
		if s.Verification != "" {
			fmt.Fprintf(w, "%s: verification: %s\n", s.App, s.Verification)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Verification prints the verdict line and per-container tables.
func Verification(w io.Writer, s *status.App, v *verdict.Verification) error {
	verdict := "NOT VERIFIED"
	if v.Verified {
		verdict = "VERIFIED"
	}
	fmt.Fprintf(w, "%s at %s: %s: %s\n", v.App, commitid.Short(v.Commit), verdict, v.Summary())
	if s.Source != "" && s.Source != "pinbot" {
		fmt.Fprintf(w, "  deployed by %s at %s (sync %s, health %s)\n", deployer.Kind(s.Source).Title(), orDash(commitid.Short(s.DeployedCommit)), s.Sync, s.Health)
	}
	for _, r := range v.Reasons {
		if r != v.Summary() { // the verdict line says it already
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
	if len(v.Containers) > 0 {
		fmt.Fprintln(w)
		if err := containers(w, v.Containers); err != nil {
			return err
		}
	}
	if len(v.OldRevisions) > 0 {
		fmt.Fprintln(w, "\nOlder revisions (not counted):")
		return containers(w, v.OldRevisions)
	}
	return nil
}

func containers(w io.Writer, cs []verdict.ContainerVerdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tGIT DIGEST\tRUNNING DIGEST\tVERDICT\tREASON")
	for _, c := range cs {
		name := c.Container
		if c.Init {
			name += " (init)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Pod, name,
			orDash(imageref.Short(c.GitDigest)), orDash(imageref.Short(c.RunningDigest)), c.Verdict, c.Reason)
	}
	return tw.Flush()
}

// Diff prints d as JSON under asJSON, else a verdict line, then one line
// per field out of sync, missing object and orphaned object.
func Diff(w io.Writer, asJSON bool, d *reconciler.Diff) error {
	if asJSON {
		return json.NewEncoder(w).Encode(d)
	}
	if d.InSync() {
		_, err := fmt.Fprintf(w, "%s at %s: %s: in sync\n", d.App, commitid.Short(d.Commit), d.Sync)
		return err
	}
	fmt.Fprintf(w, "%s at %s: %s: %s\n", d.App, commitid.Short(d.Commit), d.Sync, DiffSummary(d))
	for _, x := range d.Fields {
		fmt.Fprintln(w, x.String())
	}
	for _, m := range d.Missing {
		fmt.Fprintf(w, "%s: missing (in Git, not in the cluster)\n", m)
	}
	for _, o := range d.Orphaned {
		if _, err := fmt.Fprintf(w, "%s: orphaned (in the cluster, no longer in Git)\n", o); err != nil {
			return err
		}
	}
	return nil
}

// History prints app's record as JSON under asJSON, else its entries as
// a table, or that it has none.
func History(w io.Writer, asJSON bool, app string, rec *history.Record) error {
	if asJSON {
		if rec.Entries == nil {
			rec.Entries = []history.Entry{}
		}
		return json.NewEncoder(w).Encode(rec)
	}
	if len(rec.Entries) == 0 {
		_, err := fmt.Fprintf(w, "%s has no syncs recorded\n", app)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCOMMIT\tTRIGGER\tRESULT\tHEALTH\tVERIFIED\tDETAIL")
	for _, e := range rec.Entries {
		detail := e.Summary
		if e.Reason != "" {
			detail = e.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\n", e.Time.UTC().Format(time.RFC3339), commitid.Short(e.Commit),
			e.Trigger, e.Result, orDash(string(e.Health)), e.Verified, detail)
	}
	return tw.Flush()
}

// DiffSummary says in a phrase how far an app is from Git.
func DiffSummary(d *reconciler.Diff) string {
	return fmt.Sprintf("%s, %d missing, %d orphaned", plural(len(d.Fields), "field")+" out of sync", len(d.Missing), len(d.Orphaned))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Plan prints a dry run: the objects of each wave with their action,
// then what a sync would heal and prune.
func Plan(w io.Writer, asJSON bool, p *reconciler.SyncPlan) error {
	if asJSON {
		return json.NewEncoder(w).Encode(p)
	}
	var b strings.Builder
	line := func(action string, ref object.Ref, detail string) {
		fmt.Fprintf(&b, "  %-9s %s", action, ref)
		if detail != "" {
			b.WriteString(": " + detail)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s at %s: dry run, nothing changed\n", p.App, commitid.Short(p.Commit))
	for _, wave := range p.Waves {
		if wave.Phase != "" {
			b.WriteString(wave.Phase + " ")
		}
		fmt.Fprintf(&b, "wave %d\n", wave.Wave)
		for _, o := range wave.Objects {
			detail := o.Note
			if o.Error != "" {
				detail = "REFUSED: " + o.Error
			}
			line(o.Action, o.Object, detail)
		}
	}
	if len(p.Heal) > 0 {
		b.WriteString("heal\n")
		for _, d := range p.Heal {
			fmt.Fprintf(&b, "  %-9s %s\n", "heal", d)
		}
	}
	switch {
	case p.Prune && len(p.Orphans.Delete) > 0:
		b.WriteString("prune\n")
		for _, ref := range p.Orphans.Delete {
			line("delete", ref, "")
		}
	case len(p.Orphans.Delete) > 0:
		b.WriteString("orphaned (prune is off: kept; --prune would delete them)\n")
		for _, ref := range p.Orphans.Delete {
			line("orphan", ref, "")
		}
	}
	if len(p.Orphans.Keep) > 0 {
		b.WriteString("orphaned, never pruned\n")
		for _, k := range p.Orphans.Keep {
			line("keep", k.Object, k.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ServerApps prints the apps a running pinbot serve answered with: under
// asJSON the API's documents (the one app's alone when one), else a line
// each.
func ServerApps(w io.Writer, asJSON, one bool, apps []dashboard.APIApp) error {
	if asJSON {
		if one {
			return json.NewEncoder(w).Encode(apps[0])
		}
		return json.NewEncoder(w).Encode(apps)
	}
	for _, a := range apps {
		line := fmt.Sprintf("%s: %s, %s, %s", a.Name, a.Sync, a.Health, a.Proof)
		if a.HeadCommit != "" {
			line += " at " + commitid.Short(a.HeadCommit)
		}
		if a.Verification != "" {
			line += ": " + a.Verification
		}
		if a.Unavailable != "" {
			line += " (unavailable: " + a.Unavailable + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// VerifyResult is verify -o json: the verification's keys, and who
// deployed what.
type VerifyResult struct {
	*verdict.Verification
	Source         string `json:"source"`
	DeployedCommit string `json:"deployedCommit"`
	HeadCommit     string `json:"headCommit"`
}

// Verify prints what `pinbot verify` found: under asJSON a VerifyResult,
// else the verification and its containers.
func Verify(w io.Writer, asJSON bool, s *status.App, v *verdict.Verification) error {
	if asJSON {
		return json.NewEncoder(w).Encode(VerifyResult{Verification: v, Source: s.Source, DeployedCommit: s.DeployedCommit, HeadCommit: s.HeadCommit})
	}
	return Verification(w, s, v)
}

// AppStatuses prints apps' statuses: under asJSON one object when one
// app was asked for, else a list; else a table.
func AppStatuses(w io.Writer, asJSON bool, statuses []*status.App, one bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		if one && len(statuses) == 1 {
			return enc.Encode(statuses[0])
		}
		if statuses == nil {
			statuses = []*status.App{}
		}
		return enc.Encode(statuses)
	}
	return Statuses(w, statuses)
}

// Sync prints what `pinbot sync` did: the app's status and, when it
// waited for one, the verification.
func Sync(w io.Writer, asJSON bool, s *status.App, v *verdict.Verification) error {
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Status       *status.App           `json:"status"`
			Verification *verdict.Verification `json:"verification"`
		}{s, v})
	}
	if err := Statuses(w, []*status.App{s}); err != nil {
		return err
	}
	if v != nil {
		fmt.Fprintln(w)
		return Verification(w, s, v)
	}
	return nil
}
