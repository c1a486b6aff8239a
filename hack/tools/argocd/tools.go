//go:build tools

// Package tools pins the Argo CD this module builds.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
