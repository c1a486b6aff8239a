package dashboard

import (
	"net/url"
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
)

// digestCell is a digest as a table cell shows it: short, or "-" for none.
func digestCell(d string) string {
	if d == "" {
		return "-"
	}
	return imageref.Short(d)
}

// commitLink links sha to its page on the forge: Gitea (like GitHub)
// shows a commit at <repo web URL>/commit/<sha>. A repository that is
// not http(s) gets no link, and a revision that is no commit id (the
// version of a chart of a Helm repository) shows whole, unlinked.
func commitLink(repo, sha string) Link {
	if sha == "" {
		return Link{Text: "-"}
	}
	if !isCommitID(sha) {
		return Link{Text: sha}
	}
	l := Link{Text: sha[:min(len(sha), 8)]}
	u, err := url.Parse(repo)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return l
	}
	u.User = nil
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git") + "/commit/" + url.PathEscape(sha)
	l.URL = u.String()
	return l
}

// isCommitID reports whether s is a full Git commit id (SHA-1 or SHA-256).
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// safeURL passes http(s) URLs only.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return s
}

// pullLink links pull request number of the repository whose web page
// is web ("" for none: the number alone).
func pullLink(web string, number int64, text string) Link {
	l := Link{Text: text}
	if web = safeURL(web); web != "" && number > 0 {
		l.URL = strings.TrimRight(web, "/") + "/pulls/" + itoa(number)
	}
	return l
}
