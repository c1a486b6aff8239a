package gitforge

import (
	"net/http"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ResponseTimeout bounds how long one request to the forge, Git or API,
// waits for the server to start answering. A forge that accepts the
// connection and never answers fails the call after it, rather than
// hanging pinbot. A clone or fetch that streams data takes as long as it
// needs: only a server that says nothing at all is cut off.
const ResponseTimeout = 60 * time.Second

// go-git's HTTP transport is process-wide: pinbot's Git calls all go
// through this package, which installs a client whose transport bounds
// the wait for response headers (go-git's default has no bound). Per-call
// CA bundles still apply: go-git clones this transport for them.
func init() {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = ResponseTimeout
	c := githttp.NewClient(&http.Client{Transport: t})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}
