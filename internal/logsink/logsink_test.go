package logsink

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"pinbot.dev/pinbot/internal/redact"
)

// syncBuffer is a bytes.Buffer safe for the reflector's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jsonLines fails t unless every line of out is a JSON object, and returns
// them.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("a log line is not JSON: %q", l)
			continue
		}
		lines = append(lines, m)
	}
	return lines
}

func TestNew(t *testing.T) {
	redact.Register("sekrit-token-for-logsink")
	var buf bytes.Buffer
	l := New(&buf, true, slog.LevelInfo)
	l.Info("waited for sekrit-token-for-logsink", "after", 25*time.Second, "err", errors.New("echo: Bearer sekrit-token-for-logsink"),
		"header", "sekrit-token-for-logsink")
	if strings.Contains(buf.String(), "sekrit-token-for-logsink") {
		t.Errorf("a registered secret was logged: %s", buf.String())
	}
	lines := jsonLines(t, buf.String())
	if len(lines) != 1 || lines[0]["after"] != "25s" {
		t.Errorf("got %v, want one line with after=25s", lines)
	}
}

// TestKlogGoesThroughTheSink checks that klog's lines, in the forms
// client-go writes them, come out as the sink's JSON, redacted.
func TestKlogGoesThroughTheSink(t *testing.T) {
	redact.Register("klog-secret-0123456789")
	var buf syncBuffer
	Klog(New(&buf, true, slog.LevelInfo))
	t.Cleanup(klog.ClearLogger)
	klog.Infof("Attempting to acquire leader lease %s...", "pinbot-system/pinbot")
	klog.ErrorS(errors.New("HTTP 401: Bearer klog-secret-0123456789"), "Failed to watch", "reflector", "pods")
	klog.InfoS("waited", "for", 3*time.Second)
	klog.Flush()
	out := buf.String()
	if strings.Contains(out, "klog-secret-0123456789") {
		t.Errorf("klog printed a registered secret: %s", out)
	}
	lines := jsonLines(t, out)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %s", len(lines), out)
	}
	if lines[0]["msg"] != "Attempting to acquire leader lease pinbot-system/pinbot..." || lines[1]["level"] != "ERROR" || lines[2]["for"] != "3s" {
		t.Errorf("lines %v", lines)
	}
}

// TestEchoingSpoke: a cluster whose API server echoes the request's
// Authorization header in its errors. client-go's reflector logs those
// errors; with the sink and redact.Credentials, none of its lines holds
// the token, and each is JSON.
func TestEchoingSpoke(t *testing.T) {
	const token = "spoke-bearer-token-never-registered-by-hand"
	var asked sync.WaitGroup
	asked.Add(1)
	var once sync.Once
	spoke := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer once.Do(asked.Done)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		msg, _ := json.Marshal("forbidden: your credential was " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":` + string(msg) + `}`))
	}))
	t.Cleanup(spoke.Close)

	var buf syncBuffer
	Klog(New(&buf, true, slog.LevelInfo))
	t.Cleanup(klog.ClearLogger)

	rc := &rest.Config{Host: spoke.URL, BearerToken: token}
	rc.Wrap(redact.Credentials)
	kube := kubernetes.NewForConfigOrDie(rc)
	factory := informers.NewSharedInformerFactory(kube, 0)
	factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	asked.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "forbidden") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	factory.Shutdown()
	out := buf.String()
	if !strings.Contains(out, "forbidden") {
		t.Fatalf("the reflector logged nothing of the spoke's answer: %q", out)
	}
	if strings.Contains(out, token) {
		t.Errorf("the spoke's token is in the log: %s", out)
	}
	jsonLines(t, out)
}
