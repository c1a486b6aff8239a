package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/loopback"
)

// checkRegistry asks the registry's /v2/ over HTTPS, trusting the system's
// roots and --ca-file, before minutes of compiling, and settles how every
// later push speaks to it: HTTPS, or plain HTTP only where the registry
// speaks nothing else and it is on loopback or --insecure allows it. A
// certificate pinbot cannot verify is an error that says which CA flag to
// pass, never a step down to plain HTTP.
func (o *options) checkRegistry(ctx context.Context) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.caFile != "" {
		pool, err := capool.Load(o.caFile)
		if err != nil {
			return usagef("flag --ca-file: %s", err)
		}
		tr.TLSClientConfig = capool.TLS(pool)
	}
	o.transport = tr
	host := o.image.RegistryStr()
	err := ping(ctx, tr, "https://"+host+"/v2/")
	if err == nil {
		o.nameOptions = []name.Option{name.StrictValidation}
		return o.renameRepositories()
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname):
		return fmt.Errorf("registry %s: its certificate is not trusted (%w): pass its CA's PEM with CA_FILE=ca.pem (--ca-file); nothing was built or pushed", host, err)
	case errors.As(err, &record) || errors.Is(err, http.ErrSchemeMismatch):
		h, _, _ := net.SplitHostPort(host)
		if h == "" {
			h = host
		}
		if !o.insecure && !loopback.Host(h) {
			return fmt.Errorf("registry %s speaks plain HTTP, which would carry the push credentials in clear: serve it over TLS, or pass --insecure; nothing was built or pushed", host)
		}
		if err := ping(ctx, tr, "http://"+host+"/v2/"); err != nil {
			return fmt.Errorf("registry %s: %w; nothing was built or pushed", host, err)
		}
		o.plainHTTP = true
		o.nameOptions = []name.Option{name.StrictValidation, name.Insecure}
		return o.renameRepositories()
	default:
		return fmt.Errorf("registry %s: %w; nothing was built or pushed", host, err)
	}
}

// ping asks url; any HTTP answer (401 included) is a registry there.
func ping(ctx context.Context, tr http.RoundTripper, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// renameRepositories parses the image's and the chart's repositories
// again with the name options checkRegistry settled.
func (o *options) renameRepositories() error {
	var err error
	if o.image, err = name.NewRepository(o.image.Name(), o.nameOptions...); err != nil {
		return err
	}
	o.chart, err = name.NewRepository(o.chart.Name(), o.nameOptions...)
	return err
}
