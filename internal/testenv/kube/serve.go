package kube

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServeDeployment is pinbot serve's Deployment in ns as the kustomize base
// and the chart shape it, as far as a command reading the install looks:
// the name label, a container "pinbot" running args with mounts of
// volumes, and no replicas (nothing runs it).
func ServeDeployment(ns string, args []string, mounts []corev1.VolumeMount, volumes []corev1.Volume) *appsv1.Deployment {
	none := int32(0)
	labels := map[string]string{"app.kubernetes.io/name": "pinbot"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pinbot", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &none,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "pinbot", Image: "pinbot.invalid/pinbot:v0", Args: args, VolumeMounts: mounts}},
					Volumes:    volumes,
				},
			},
		},
	}
}
