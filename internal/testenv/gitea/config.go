package gitea

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// config is what app.ini is rendered from.
type config struct {
	Dir        string // work path; everything Gitea writes lives under it
	StaticRoot string // Gitea's module source dir (options/, templates/, public/)
	Port       int
	TLS        bool
	CertFile   string
	KeyFile    string
	// JournalMode is SQLite's: WAL for a server, DELETE for the seed, so the
	// seed is one self-contained file.
	JournalMode string

	SecretKey, InternalToken, JWTSecret, LFSJWTSecret string
}

// newConfig generates fresh secrets for one server.
func newConfig(dir, staticRoot string, port int, tls bool) config {
	c := config{
		Dir:           dir,
		StaticRoot:    staticRoot,
		Port:          port,
		TLS:           tls,
		JournalMode:   "WAL",
		SecretKey:     hex.EncodeToString(random(32)),
		InternalToken: hex.EncodeToString(random(32)),
		JWTSecret:     base64.RawURLEncoding.EncodeToString(random(32)),
		LFSJWTSecret:  base64.RawURLEncoding.EncodeToString(random(32)),
	}
	if tls {
		c.CertFile = filepath.Join(dir, "cert.pem")
		c.KeyFile = filepath.Join(dir, "key.pem")
	}
	return c
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return b
}

// Scheme is "https" in TLS mode, else "http".
func (c config) Scheme() string {
	if c.TLS {
		return "https"
	}
	return "http"
}

// URL is the root URL without a trailing slash.
func (c config) URL() string { return fmt.Sprintf("%s://127.0.0.1:%d", c.Scheme(), c.Port) }

func (c config) iniPath() string { return filepath.Join(c.Dir, "custom", "conf", "app.ini") }

func (c config) write() error {
	path := c.iniPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing app.ini: %w", err)
	}
	var b strings.Builder
	if err := appINI.Execute(&b, c); err != nil {
		return fmt.Errorf("rendering app.ini: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing app.ini: %w", err)
	}
	return nil
}

// appINI turns off everything the tests do not use (SSH, mail, indexers,
// cron, actions, OAuth2, avatars from the network) so Gitea starts fast and
// stays quiet, and keeps what they do use: the API, Git over HTTP and the
// container registry ([packages]).
var appINI = template.Must(template.New("app.ini").Parse(`APP_NAME = pinbot test Gitea
RUN_MODE = prod
WORK_PATH = {{.Dir}}
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = {{.Scheme}}
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.Port}}
DOMAIN = 127.0.0.1
ROOT_URL = {{.URL}}/
LOCAL_ROOT_URL = {{.URL}}/
{{- if .TLS}}
CERT_FILE = {{.CertFile}}
KEY_FILE = {{.KeyFile}}
{{- end}}
STATIC_ROOT_PATH = {{.StaticRoot}}
APP_DATA_PATH = {{.Dir}}/data
DISABLE_SSH = true
START_SSH_SERVER = false
SSH_CREATE_AUTHORIZED_KEYS_FILE = false
LFS_START_SERVER = false
LFS_JWT_SECRET = {{.LFSJWTSecret}}
OFFLINE_MODE = true
GRACEFUL_HAMMER_TIME = 2s

[database]
DB_TYPE = sqlite3
PATH = {{.Dir}}/data/gitea.db
SQLITE_JOURNAL_MODE = {{.JournalMode}}
LOG_SQL = false

[repository]
ROOT = {{.Dir}}/repos
DEFAULT_BRANCH = main
DEFAULT_PUSH_CREATE_PRIVATE = false

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.SecretKey}}
INTERNAL_TOKEN = {{.InternalToken}}
PASSWORD_COMPLEXITY = off
MIN_PASSWORD_LENGTH = 8

[oauth2]
ENABLED = false
JWT_SIGNING_ALGORITHM = HS256
JWT_SECRET = {{.JWTSecret}}

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false
DEFAULT_ALLOW_CREATE_ORGANIZATION = true
NO_REPLY_ADDRESS = noreply.localhost

[mailer]
ENABLED = false

[packages]
ENABLED = true

[actions]
ENABLED = false

[webhook]
ALLOWED_HOST_LIST = loopback
SKIP_TLS_VERIFY = true

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[queue]
TYPE = channel

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[mirror]
ENABLED = false

[migrations]
ALLOW_LOCALNETWORKS = true

[i18n]
LANGS = en-US
NAMES = English

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = {{.Dir}}/log
logger.router.MODE =
logger.access.MODE =
logger.xorm.MODE =
`))
