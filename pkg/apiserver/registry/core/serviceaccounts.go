package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func ServiceAccountsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "ServiceAccount", ListKind: "ServiceAccountList", Plural: "serviceaccounts", Singular: "serviceaccount",
			ShortNames: []string{"sa"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList: func() runtime.Object { return &corev1.ServiceAccountList{} },
	}
}
