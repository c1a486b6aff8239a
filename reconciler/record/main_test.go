package record

import (
	"testing"

	"pinbot.dev/pinbot/internal/testenv/kube"
)

// plane is one real control plane for the package's tests, each in a
// namespace of its own; mallory may be made a ConfigMap writer of one.
var plane = kube.Shared{Options: kube.Options{Users: []kube.User{{Name: "mallory"}}}}

func TestMain(m *testing.M) { plane.Main(m) }
