package pins

import (
	"os"
	"testing"
)

// TestMain keeps the journals of the tests' Sets out of the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pins-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
