//go:build tools

// Package tools pins the OpenID Provider the dashboard's sign-in tests
// run against.
package tools

import _ "github.com/zitadel/oidc/v3/example/server"
