package kube

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ConfigMapWriter makes namespace ns (unless it exists) and lets user,
// one of Options.Users, read and write every ConfigMap there and nothing
// else: the insider pinbot's ledgers and records are sealed against. It
// returns the user's client.
func (c *Cluster) ConfigMapWriter(ctx context.Context, ns, user string) (kubernetes.Interface, error) {
	if err := c.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	admin, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return nil, err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-" + user}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("the Role of %s's ConfigMaps: %w", user, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("binding %s's ConfigMaps: %w", user, err)
	}
	rc, err := c.UserConfig(user)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// StartWithConfigMapWriter starts a control plane whose user, besides the
// admin, may write every ConfigMap in namespace ns and nothing else
// (ConfigMapWriter); it returns the admin's client and the user's.
func StartWithConfigMapWriter(ctx context.Context, ns, user string) (c *Cluster, admin, writer kubernetes.Interface, err error) {
	if c, err = Start(ctx, Options{Users: []User{{Name: user}}}); err != nil {
		return nil, nil, nil, fmt.Errorf("starting the control plane: %w", err)
	}
	if admin, err = kubernetes.NewForConfig(c.Config()); err == nil {
		writer, err = c.ConfigMapWriter(ctx, ns, user)
	}
	if err != nil {
		_ = c.Stop()
		return nil, nil, nil, err
	}
	return c, admin, writer, nil
}
