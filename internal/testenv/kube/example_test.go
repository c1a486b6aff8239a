package kube_test

import (
	"context"
	"fmt"
	"log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
)

func Example() {
	ctx := context.Background()
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		log.Fatal(err) // says to run `make kube` when bin/ lacks the binaries
	}
	defer cluster.Stop()

	client := kubernetes.NewForConfigOrDie(cluster.Config())
	sa, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		log.Fatal(err, "\n", cluster.Tail(20))
	}
	fmt.Println(sa.Name, cluster.Kubeconfig != "")
}
