// Package loopback is pinbot's one home for the rule "plain HTTP only to
// loopback": a credential may cross plain HTTP only when the request never
// leaves the machine.
package loopback

import (
	"net"
	"net/url"
	"strings"
)

// Host reports whether hostname (without port or brackets) is localhost
// or a loopback address, in any case. Any other name, even one that
// resolves to loopback, counts as remote: what a name resolves to can
// change.
func Host(hostname string) bool {
	hostname = strings.TrimSuffix(strings.TrimPrefix(hostname, "["), "]")
	if strings.EqualFold(hostname, "localhost") {
		return true
	}
	ip := net.ParseIP(hostname)
	return ip != nil && ip.IsLoopback()
}

// Cleartext reports whether requests to u cross the network in clear, so
// that a token sent with them could be read on the way: plain HTTP to a
// host that is not loopback. HTTPS, and plain HTTP that never leaves the
// machine, are not cleartext.
func Cleartext(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, "http") && !Host(u.Hostname())
}
