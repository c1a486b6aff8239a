package pr

import (
	"fmt"
	"strings"
)

// RenderDiff renders changes as a unified diff with one hunk per changed
// line and no context, as `git diff -U0` would show them.
func RenderDiff(changes []ChangeRecord) string {
	var b strings.Builder
	file := ""
	for _, c := range changes {
		if c.File != file {
			file = c.File
			fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", file, file)
		}
		if c.Before == "" { // a line pins added
			fmt.Fprintf(&b, "@@ -%d,0 +%d @@\n+%s\n", c.Line-1, c.Line, c.After)
			continue
		}
		fmt.Fprintf(&b, "@@ -%d +%d @@\n-%s\n+%s\n", c.Line, c.Line, c.Before, c.After)
	}
	return b.String()
}
