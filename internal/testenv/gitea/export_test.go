package gitea

// SetFreePort replaces how Start finds a port until restore is called.
func SetFreePort(f func() (int, error)) (restore func()) {
	old := freePort
	freePort = f
	return func() { freePort = old }
}
