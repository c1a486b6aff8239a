//go:build tools

// Package tools pins the Kyverno CLI this module builds.
package tools

import _ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
