package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pollInterval paces the start-up probes: short, because start-up time is
// what every test package pays.
const pollInterval = 50 * time.Millisecond

func (c *Cluster) healthClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.pki.caPEM) {
		return nil, errors.New("loading the cluster CA: no certificate")
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// waitHTTP polls url until it answers 200, failing early when one of procs
// exits.
func waitHTTP(ctx context.Context, hc *http.Client, url, token string, procs ...*process) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last string
	for {
		for _, p := range procs {
			if err := p.exited(); err != nil {
				return err
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probing %s: %w", url, err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (last answer: %s): %w", url, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitDefaultServiceAccount waits for the serviceaccount controller to create
// default/default: the ServiceAccount admission plugin refuses Pods until it
// exists.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		for _, p := range c.procs {
			if err := p.exited(); err != nil {
				return err
			}
		}
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return fmt.Errorf("getting ServiceAccount default/default: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-controller-manager to create ServiceAccount default/default: %w\n%s", ctx.Err(), tail(c.Logs.ControllerManager, 30))
		case <-tick.C:
		}
	}
}
