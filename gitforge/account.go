package gitforge

import (
	"context"
	"fmt"

	sdk "code.gitea.io/sdk/gitea"
)

// Self returns the login of the account the token belongs to. Gitea is
// asked once; a failed answer is not remembered.
func (g *Gitea) Self(ctx context.Context) (string, error) {
	g.mu.Lock()
	login := g.self
	g.mu.Unlock()
	if login != "" {
		return login, nil
	}
	err := g.call(ctx, "reading the token's account", func(c *sdk.Client) (*sdk.Response, error) {
		u, resp, err := c.GetMyUserInfo()
		if err == nil {
			login = u.UserName
		}
		return resp, err
	})
	if err != nil {
		return "", err
	}
	if login == "" {
		return "", fmt.Errorf("reading the token's account: Gitea named no login")
	}
	g.mu.Lock()
	g.self = login
	g.mu.Unlock()
	return login, nil
}
