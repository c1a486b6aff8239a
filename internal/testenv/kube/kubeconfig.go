package kube

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig file for user at path and returns path.
func (c *Cluster) writeKubeconfig(path, user, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["pinbot-test"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.pki.caPEM,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["pinbot-test"] = &clientcmdapi.Context{Cluster: "pinbot-test", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "pinbot-test"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return path, nil
}
