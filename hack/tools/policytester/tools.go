//go:build tools

// Package tools pins Sigstore policy-controller's policy-tester, which this
// module builds.
package tools

import _ "github.com/sigstore/policy-controller/cmd/tester"
