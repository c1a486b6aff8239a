package store

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Writer is a subject of the cluster's RBAC that may change the ledgers:
// write ConfigMaps in their namespace. With Key it may also read the key
// that seals them, and so write a ledger pinbot trusts (lift a hold
// unseen); without it, pinbot refuses and restores what it writes.
type Writer struct {
	// Subject is "User NAME", "Group NAME" or "ServiceAccount NS/NAME".
	Subject string `json:"subject"`
	// Bindings name the (Cluster)RoleBindings that bind it.
	Bindings []string `json:"bindings"`
	Key      bool     `json:"key"`
}

// Writers asks the cluster, one SubjectAccessReview per subject bound by
// a RoleBinding in the ledgers' namespace or a ClusterRoleBinding, who
// may write the ledgers, and who may read their key too. It needs list on
// both kinds of binding and create on subjectaccessreviews: an admin's.
func (s *Ledgers) Writers(ctx context.Context) ([]Writer, error) {
	type bound struct {
		s        rbacv1.Subject
		bindings []string
	}
	var subjects []*bound
	add := func(binding string, ss []rbacv1.Subject) {
		for _, sub := range ss {
			i := slices.IndexFunc(subjects, func(b *bound) bool {
				return b.s.Kind == sub.Kind && b.s.Name == sub.Name && b.s.Namespace == sub.Namespace
			})
			if i < 0 {
				subjects = append(subjects, &bound{s: sub})
				i = len(subjects) - 1
			}
			subjects[i].bindings = append(subjects[i].bindings, binding)
		}
	}
	rbs, err := s.client.RbacV1().RoleBindings(s.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the RoleBindings of %s: %w", s.namespace, err)
	}
	for _, b := range rbs.Items {
		add("RoleBinding "+s.namespace+"/"+b.Name, b.Subjects)
	}
	crbs, err := s.client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the ClusterRoleBindings: %w", err)
	}
	for _, b := range crbs.Items {
		add("ClusterRoleBinding "+b.Name, b.Subjects)
	}
	var out []Writer
	for _, b := range subjects {
		write, err := s.may(ctx, b.s, "update", "configmaps", "")
		if err != nil {
			return nil, err
		}
		if !write {
			continue
		}
		key, err := s.may(ctx, b.s, "get", "secrets", KeySecret)
		if err != nil {
			return nil, err
		}
		name := b.s.Kind + " " + b.s.Name
		if b.s.Kind == rbacv1.ServiceAccountKind {
			name = b.s.Kind + " " + b.s.Namespace + "/" + b.s.Name
		}
		out = append(out, Writer{Subject: name, Bindings: b.bindings, Key: key})
	}
	return out, nil
}

// may asks whether sub may verb resource (named name) in the ledgers'
// namespace.
func (s *Ledgers) may(ctx context.Context, sub rbacv1.Subject, verb, resource, name string) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
		Namespace: s.namespace, Verb: verb, Resource: resource, Name: name}}
	switch sub.Kind {
	case rbacv1.UserKind:
		spec.User = sub.Name
	case rbacv1.GroupKind:
		spec.Groups = []string{sub.Name}
	case rbacv1.ServiceAccountKind:
		spec.User = "system:serviceaccount:" + sub.Namespace + ":" + sub.Name
		spec.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + sub.Namespace}
	}
	r, err := s.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking whether %s %s may %s %s: %w", sub.Kind, sub.Name, verb, resource, err)
	}
	return r.Status.Allowed, nil
}
