package gitforge

import "pinbot.dev/pinbot/internal/tokenfile"

// TokenEnv is the environment variable that holds the Gitea token when no
// token file is named. A token is never a flag value: flags show in
// process listings and shell history.
const TokenEnv = "PINBOT_GITEA_TOKEN"

// ResolveToken is the one place pinbot finds a Gitea token: the token file
// when one is named, else $PINBOT_GITEA_TOKEN (see tokenfile.ResolveFrom).
func ResolveToken(file string) (string, error) { return tokenfile.ResolveFrom(file, TokenEnv) }

// Dial returns the client of the Gitea at baseURL that trusts caFile (when
// named) besides the system roots, with token, or when that is "" the
// token ResolveToken finds for tokenFile.
func Dial(baseURL, tokenFile, caFile, token string) (*Gitea, error) {
	var opts []GiteaOption
	if token == "" {
		var err error
		if token, err = ResolveToken(tokenFile); err != nil {
			return nil, err
		}
		opts = append(opts, WithTokenSource("$"+TokenEnv))
		if tokenFile != "" {
			opts[0] = WithTokenSource("the token file " + tokenFile)
		}
	}
	if caFile != "" {
		opts = append(opts, WithCAFile(caFile))
	}
	return NewGitea(baseURL, token, opts...)
}
