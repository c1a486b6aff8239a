package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestExamplesParse: every command a reader runs has an Examples:
// section, and each of its lines is that command with flags it has and
// arguments it takes, as pasted.
func TestExamplesParse(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		switch c.Name() {
		case "help", "completion", "version", "reconcile":
			return // cobra's own, a version, and the hidden loop of old
		}
		if !c.Runnable() || c.Hidden || c.Parent() != nil && c.Parent().Name() == "completion" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			if !c.HasSubCommands() { // a group's examples are its commands'
				t.Errorf("%s has no examples", c.CommandPath())
			}
			return
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			args := shellFields(line)
			root := NewRootCommand()
			found, rest, err := root.Find(args[1:])
			if args[0] != "pinbot" || err != nil || found.CommandPath() != c.CommandPath() {
				t.Errorf("%s: example %q runs %v (%v), not this command", c.CommandPath(), line, found.CommandPath(), err)
				continue
			}
			if err := found.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			if found.Args != nil {
				if err := found.Args(found, found.Flags().Args()); err != nil {
					t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				}
			}
			if err := found.ValidateRequiredFlags(); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
		}
	}
	walk(NewRootCommand())
}

// shellFields splits a command line as a shell does for these examples:
// at spaces, keeping double-quoted words whole.
func shellFields(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
