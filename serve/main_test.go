package serve

import (
	"testing"

	"pinbot.dev/pinbot/internal/testenv/kube"
)

// plane is the real control plane serve's tests share, each in a
// namespace of its own.
var plane kube.Shared

func TestMain(m *testing.M) { plane.Main(m) }
