package pins

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FuzzTreeShapes builds a tree from the fuzzer's bytes (manifests, links
// out of the tree and inside it, to /dev/zero and to a FIFO outside, a
// FIFO inside, odd names, a planted journal and staged-file lookalikes)
// and runs Scan, Plan and Set on it. Whatever the shape, they end within
// a bound, nothing outside the tree is read or changed, and Set changes
// only regular files of the tree, leaving nothing staged behind. `make
// test` runs it for 60s.
func FuzzTreeShapes(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte("links and fifos and names\n\x1b[2J"))
	f.Add([]byte{255, 254, 3, 3, 3, 7, 7, 9, 9, 12, 12, 0})
	f.Fuzz(func(t *testing.T, shape []byte) {
		if len(shape) > 64 {
			shape = shape[:64]
		}
		base := t.TempDir()
		root, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
		for _, d := range []string{root, outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		victim := filepath.Join(outside, "victim.yaml")
		os.WriteFile(victim, []byte("image: nginx@"+digestA+"\n"), 0o644)
		fifoOut := filepath.Join(outside, "fifo.yaml")
		if err := syscall.Mkfifo(fifoOut, 0o600); err != nil {
			t.Fatal(err)
		}
		build(t, root, outside, shape)
		before := snapshotDir(t, outside)
		readers := watchFIFO(t, fifoOut)
		jd := t.TempDir()

		done := make(chan struct{})
		go func() {
			defer close(done)
			Scan(root, WithJournalDir(jd))
			Plan(root, Update{Image: "nginx", Digest: digestB}, WithJournalDir(jd))
			Set(root, Update{Image: "nginx", Digest: digestB}, WithJournalDir(jd))
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("Scan, Plan and Set did not end on a tree of shape %v", shape)
		}
		if n := readers(); n > 0 {
			t.Errorf("something opened the FIFO outside the tree %d times", n)
		}
		if diff := snapshotDir(t, outside); diff != before {
			t.Errorf("the directory outside the tree changed")
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".pinbot-") && !strings.HasPrefix(d.Name(), ".lookalike") && len(d.Name()) > 20 {
				if strings.HasSuffix(d.Name(), ".old") || isOurToken(d.Name()) {
					t.Errorf("Set left %s behind", p)
				}
			}
			return nil
		})
	})
}

// isOurToken reports a name staged with a random token of Set (24 hex
// digits), which build never makes.
func isOurToken(name string) bool {
	i := strings.LastIndex(name, ".pinbot-")
	tok := strings.TrimSuffix(name[i+len(".pinbot-"):], ".old")
	if len(tok) != 24 {
		return false
	}
	for _, c := range tok {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// build makes the tree at root from shape, one entry per byte.
func build(t *testing.T, root, outside string, shape []byte) {
	t.Helper()
	names := []string{"a.yaml", "b.yml", "Dockerfile", "kustomization.yaml", "pins.yaml", "values.yaml", "x\ny.yaml", "\x1b[31m.yaml", "é.yaml", ".hidden.yaml"}
	dirs := []string{"", "d/", "d/e/", "templates/", "node_modules/"}
	for i, b := range shape {
		dir := dirs[int(b>>4)%len(dirs)]
		name := dir + names[(i+int(b))%len(names)]
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if exists(p) {
			continue
		}
		var err error
		switch b % 13 {
		case 0, 1, 2:
			content := "image: nginx:1.27@" + digestA + "\n"
			if strings.HasSuffix(name, "Dockerfile") {
				content = "FROM nginx@" + digestA + "\n"
			}
			err = os.WriteFile(p, []byte(content), 0o644)
		case 3:
			err = os.Symlink(filepath.Join(outside, "victim.yaml"), p)
		case 4:
			err = os.Symlink("../"+strings.Repeat("../", strings.Count(dir, "/"))+"outside/victim.yaml", p)
		case 5:
			err = os.Symlink("/dev/zero", p)
		case 6:
			err = os.Symlink(filepath.Join(outside, "fifo.yaml"), p)
		case 7:
			err = syscall.Mkfifo(p, 0o600)
		case 8:
			err = os.Symlink(outside, filepath.Join(filepath.Dir(p), "up"))
		case 9:
			// A journal of the old protocol, planted in the tree.
			err = os.WriteFile(filepath.Join(filepath.Dir(p), ".pinbot-journal"), []byte(`{"version":1,"phase":"committing","files":[{"file":"../outside/victim.yaml","size":30}]}`), 0o644)
		case 10:
			err = os.WriteFile(filepath.Join(filepath.Dir(p), ".lookalike.yaml.pinbot-123456"), []byte("tracked\n"), 0o644)
		case 11:
			err = os.Symlink(".", filepath.Join(filepath.Dir(p), "loop"))
		case 12:
			err = os.WriteFile(p, []byte("image: nginx@"+digestA+"\n"+strings.Repeat("#", 64)+"\n"), 0o600)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
}

// snapshotDir sums the names, modes, sizes, times and contents of the
// regular files under dir (FIFOs by name and mode only).
func snapshotDir(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		h.Write([]byte(p + fi.Mode().String() + fi.ModTime().String()))
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// watchFIFO counts the times a reader opens the FIFO fifo while the test
// runs: a writer's non-blocking open succeeds only then. It returns the
// count so far, and stops when the test ends.
func watchFIFO(t *testing.T, fifo string) func() int {
	stop := make(chan struct{})
	count := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				count <- n
				return
			default:
			}
			if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				n++
				syscall.Close(fd)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() int { close(stop); return <-count }
}
