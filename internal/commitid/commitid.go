// Package commitid spells Git commit ids for people. It imports only the
// standard library, so the pure packages that render text share it with
// the ones that speak Git.
package commitid

// Short is a commit id as people read it: its first 12 hex digits.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
