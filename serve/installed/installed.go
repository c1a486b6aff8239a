// Package installed finds pinbot serve as a namespace installs it (the
// kustomize base or the Helm chart: a Deployment of pinbot's name label
// whose container runs "serve") and lays the files its Pod mounts from
// ConfigMaps and Secrets out in a private local directory, so that a
// command run with nothing but a kubeconfig context reads the config, and
// the credentials, serve reads.
package installed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Selector finds serve's Deployment: the label both installs set.
const Selector = "app.kubernetes.io/name=pinbot"

// Serve is the serve a namespace runs, its files laid out under Root.
type Serve struct {
	// Deployment is the Deployment's namespace/name.
	Deployment string
	// Root is the private directory the Pod's files are laid out in: the
	// Pod's path /etc/x is Root/etc/x.
	Root string
	// Config is the config file's path in the Pod (its --config).
	Config string
	// Unread are the mounts that could not be read, each with why (a
	// Secret the caller may not get, say): their files are missing.
	Unread []string
	// CAFile is a PEM bundle, under Root, of the CAs the container
	// trusts besides its image's own: the laid-out files its
	// SSL_CERT_FILE or SSL_CERT_DIR names (the chart's extraCACerts).
	// "" for none.
	CAFile string
}

// Find finds serve's Deployment in namespace ns and lays the files of its
// ConfigMap, Secret and projected volumes out under a new private
// directory ($XDG_RUNTIME_DIR's, else the temporary directory's); Close
// removes it.
func Find(ctx context.Context, kube kubernetes.Interface, ns string) (*Serve, error) {
	list, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: Selector})
	if err != nil {
		return nil, fmt.Errorf("finding pinbot serve in namespace %s: %w", ns, err)
	}
	for _, d := range list.Items {
		spec := d.Spec.Template.Spec
		for _, c := range spec.Containers {
			file, ok := configArg(c.Args)
			if !ok {
				continue
			}
			s := &Serve{Deployment: ns + "/" + d.Name, Config: file}
			if s.Root, err = privateDir(); err != nil {
				return nil, err
			}
			err := s.layOut(ctx, kube, ns, spec.Volumes, c.VolumeMounts)
			if err == nil {
				err = s.trustBundle(c.Env)
			}
			if err != nil {
				s.Close()
				return nil, err
			}
			return s, nil
		}
	}
	return nil, fmt.Errorf("no pinbot serve in namespace %s (no Deployment labelled %s runs serve --config): name pinbot's namespace with -n, or pass --config", ns, Selector)
}

// privateDir makes the directory the files are laid out in: in the
// user's runtime directory when there is one (a tmpfs of theirs alone,
// gone at logout even if pinbot is killed before Close), else in the
// temporary directory.
func privateDir() (string, error) {
	if run := os.Getenv("XDG_RUNTIME_DIR"); run != "" {
		if dir, err := os.MkdirTemp(run, "pinbot-installed-"); err == nil {
			return dir, nil
		}
	}
	return os.MkdirTemp("", "pinbot-installed-")
}

// Close removes the laid-out files.
func (s *Serve) Close() error { return os.RemoveAll(s.Root) }

// Local is the local path of the Pod's path p, and whether it was laid
// out: false for a path no readable mount holds.
func (s *Serve) Local(p string) (string, bool) {
	if !path.IsAbs(p) {
		return p, false
	}
	local := filepath.Join(s.Root, filepath.FromSlash(path.Clean(p)))
	fi, err := os.Stat(local)
	return local, err == nil && fi.Mode().IsRegular()
}

// Path maps a credential path of the config, once loaded from Root: a
// Pod path laid out under Root, or a path under Root already, stays
// readable; "" for a file no readable mount holds.
func (s *Serve) Path(p string) string {
	if rel, err := filepath.Rel(s.Root, p); err == nil && !strings.HasPrefix(rel, "..") {
		p = "/" + filepath.ToSlash(rel)
	}
	if local, ok := s.Local(p); ok {
		return local
	}
	return ""
}

// trustBundle gathers the PEM files the container's SSL_CERT_FILE and
// SSL_CERT_DIR name, where a mount laid them out, into s.CAFile. The
// image's own directories (/etc/ssl/certs) are no mount and are left to
// this machine's roots.
func (s *Serve) trustBundle(env []corev1.EnvVar) error {
	var bundle []byte
	add := func(p string) {
		if local, ok := s.Local(p); ok {
			if data, err := os.ReadFile(local); err == nil {
				bundle = append(append(bundle, data...), '\n')
			}
		}
	}
	for _, e := range env {
		switch e.Name {
		case "SSL_CERT_FILE":
			add(e.Value)
		case "SSL_CERT_DIR":
			for _, dir := range strings.Split(e.Value, ":") {
				entries, _ := os.ReadDir(filepath.Join(s.Root, filepath.FromSlash(path.Clean("/"+dir))))
				for _, f := range entries {
					add(path.Join(dir, f.Name()))
				}
			}
		}
	}
	if len(bundle) == 0 {
		return nil
	}
	s.CAFile = filepath.Join(s.Root, ".extra-cas.pem")
	return os.WriteFile(s.CAFile, bundle, 0o600)
}

// WithCAs is the CA bundle p (a local path, "" for none) with the
// container's CAFile added, as the container's TLS clients trust p and
// its SSL_CERT_DIR: a new file under Root, or p itself when there is
// nothing to add or p cannot be read (its reader then says why).
func (s *Serve) WithCAs(p string) string {
	if s.CAFile == "" || p == s.CAFile {
		return p
	}
	if p == "" {
		return s.CAFile
	}
	own, err := os.ReadFile(p)
	extra, err2 := os.ReadFile(s.CAFile)
	if err != nil || err2 != nil {
		return p
	}
	f, err := os.CreateTemp(s.Root, ".cas-*.pem")
	if err != nil {
		return p
	}
	_, err = f.Write(append(append(own, '\n'), extra...))
	if err = errors.Join(err, f.Close()); err != nil {
		return p
	}
	return f.Name()
}

// configArg is the value of serve's --config in args.
func configArg(args []string) (string, bool) {
	if len(args) == 0 || args[0] != "serve" {
		return "", false
	}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v, v != ""
		}
		if a == "--config" && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// layOut writes the files of every mount of a ConfigMap, Secret or
// projected volume under s.Root, as the kubelet does in the Pod.
func (s *Serve) layOut(ctx context.Context, kube kubernetes.Interface, ns string, volumes []corev1.Volume, mounts []corev1.VolumeMount) error {
	objs := &objects{kube: kube, ns: ns, read: map[string]read{}}
	for _, m := range mounts {
		i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			continue
		}
		files, err := objs.files(ctx, volumes[i].VolumeSource)
		if err != nil {
			s.Unread = append(s.Unread, fmt.Sprintf("%s (volume %s): %s", m.MountPath, m.Name, err))
			continue
		}
		for p, data := range files {
			if m.SubPath != "" {
				// The mount is the one file, or the directory, at subPath.
				rel, ok := strings.CutPrefix(p, strings.TrimSuffix(m.SubPath, "/"))
				if !ok || rel != "" && !strings.HasPrefix(rel, "/") {
					continue
				}
				p = strings.TrimPrefix(rel, "/")
			}
			if err := s.write(path.Join(m.MountPath, p), data); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Serve) write(p string, data []byte) error {
	local := filepath.Join(s.Root, filepath.FromSlash(path.Clean("/"+p)))
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		return err
	}
	return os.WriteFile(local, data, 0o600)
}

// source is one object a volume projects: a ConfigMap or a Secret, the
// keys it maps, and whether it may be missing.
type source struct {
	kind, name string
	items      []corev1.KeyToPath
	optional   *bool
}

// sources are the ConfigMaps and Secrets volume v projects; none for
// another kind of volume.
func sources(v corev1.VolumeSource) []source {
	switch {
	case v.ConfigMap != nil:
		return []source{{"ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional}}
	case v.Secret != nil:
		return []source{{"Secret", v.Secret.SecretName, v.Secret.Items, v.Secret.Optional}}
	case v.Projected != nil:
		var out []source
		for _, p := range v.Projected.Sources {
			switch {
			case p.ConfigMap != nil:
				out = append(out, source{"ConfigMap", p.ConfigMap.Name, p.ConfigMap.Items, p.ConfigMap.Optional})
			case p.Secret != nil:
				out = append(out, source{"Secret", p.Secret.Name, p.Secret.Items, p.Secret.Optional})
			}
		}
		return out
	}
	return nil
}

// objects reads the ConfigMaps and Secrets the mounts project, each once
// however many volumes name it.
type objects struct {
	kube kubernetes.Interface
	ns   string
	read map[string]read // by kind/name
}

type read struct {
	data map[string][]byte
	err  error
}

func (o *objects) get(ctx context.Context, kind, name string) (map[string][]byte, error) {
	key := kind + "/" + name
	if r, ok := o.read[key]; ok {
		return r.data, r.err
	}
	var r read
	if kind == "Secret" {
		obj, err := o.kube.CoreV1().Secrets(o.ns).Get(ctx, name, metav1.GetOptions{})
		if r.err = err; err == nil {
			r.data = obj.Data
		}
	} else {
		obj, err := o.kube.CoreV1().ConfigMaps(o.ns).Get(ctx, name, metav1.GetOptions{})
		if r.err = err; err == nil {
			r.data = make(map[string][]byte, len(obj.Data)+len(obj.BinaryData))
			for k, v := range obj.Data {
				r.data[k] = []byte(v)
			}
			maps.Copy(r.data, obj.BinaryData)
		}
	}
	o.read[key] = r
	return r.data, r.err
}

// files are the files volume v holds, by their paths in it.
func (o *objects) files(ctx context.Context, v corev1.VolumeSource) (map[string][]byte, error) {
	files := map[string][]byte{}
	var errs []error
	for _, src := range sources(v) {
		data, err := o.get(ctx, src.kind, src.name)
		if err != nil {
			if err := optionalMissing(src, err); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		for p, k := range keyPaths(data, src.items) {
			files[p] = data[k]
		}
	}
	return files, errors.Join(errs...)
}

// keyPaths maps each file's path to the key it holds: every key under its
// own name, or only the items' keys under their paths.
func keyPaths(data map[string][]byte, items []corev1.KeyToPath) map[string]string {
	out := map[string]string{}
	if len(items) == 0 {
		for k := range data {
			out[k] = k
		}
		return out
	}
	for _, it := range items {
		if _, ok := data[it.Key]; ok {
			out[it.Path] = it.Key
		}
	}
	return out
}

// optionalMissing is nil for an optional object that does not exist (the
// kubelet mounts nothing), else err naming the object.
func optionalMissing(src source, err error) error {
	if apierrors.IsNotFound(err) && src.optional != nil && *src.optional {
		return nil
	}
	return fmt.Errorf("%s %s: %w", src.kind, src.name, err)
}
