package registry

import (
	"errors"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func asStorageErr(err error, target **storage.Error) bool { return errors.As(err, target) }

func MetaAccessor(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }

func ExtractList(list runtime.Object) ([]metav1.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(items))
	for _, it := range items {
		a, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
