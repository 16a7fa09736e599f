package controlplane

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DecodeRangeAllocation decodes the NodePort bitmap as the registry writes it by default.
func DecodeRangeAllocation(data []byte, into *corev1.RangeAllocation) error {
	codec, err := registry.NewStorageCodec("", corev1.SchemeGroupVersion.WithKind("RangeAllocation"), func() runtime.Object { return &corev1.RangeAllocation{} })
	if err != nil {
		return err
	}
	return codec.Decode(data, into)
}

// EtcdClientForTest is the registry's etcd client.
func (r *Registry) EtcdClientForTest() *clientv3.Client { return r.client }
