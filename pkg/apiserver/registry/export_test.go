package registry

import (
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"k8s.io/apimachinery/pkg/runtime"
)

// DecodeStored decodes a value as the registry's stores write it.
func DecodeStored(data []byte, into runtime.Object) error {
	return storage.JSONCodec{}.Decode(data, into)
}
