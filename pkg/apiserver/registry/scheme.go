package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows every built-in Go type this server serves.
var Scheme = runtime.NewScheme()

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme,
		autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
		policyv1.AddToScheme, rbacv1.AddToScheme, authorizationv1.AddToScheme,
		admissionregistrationv1.AddToScheme, certificatesv1.AddToScheme, discoveryv1.AddToScheme,
		eventsv1.AddToScheme, flowcontrolv1.AddToScheme, networkingv1.AddToScheme,
		nodev1.AddToScheme, schedulingv1.AddToScheme, storagev1.AddToScheme,
		resourcev1.AddToScheme, storagemigrationv1.AddToScheme,
		apiextensionsv1.AddToScheme,
		// Stored versions other than the served one, read and converted through the
		// internal version: kube-apiserver 1.33 stores CustomResourceDefinitions as v1beta1.
		apiextensions.AddToScheme, apiextensionsv1beta1.AddToScheme,
		// IPAddresses and ServiceCIDRs: same fields in v1beta1 and v1 (no internal version here).
		networkingv1beta1.AddToScheme,
		// Kinds kube-apiserver 1.37 stores at a pre-GA version for one release (its
		// default_storage_factory_builder.go): same fields as the served v1.
		certificatesv1beta1.AddToScheme, storagemigrationv1beta1.AddToScheme, resourcev1beta2.AddToScheme,
		apiregistration.AddToScheme,
	} {
		utilruntime.Must(add(Scheme))
	}
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	metav1.AddMetaToScheme(Scheme)
}

// The media types --storage-media-type accepts, as kube-apiserver's flag does.
const (
	StorageProtobuf = runtime.ContentTypeProtobuf // "application/vnd.kubernetes.protobuf", the default
	StorageJSON     = runtime.ContentTypeJSON     // "application/json"
	StorageYAML     = runtime.ContentTypeYAML     // "application/yaml"
)

// StorageMediaTypes lists the accepted storage media types, default first.
var StorageMediaTypes = []string{StorageProtobuf, StorageJSON, StorageYAML}

// codecs is built on first use, after every init has added its types to Scheme.
var codecs = sync.OnceValue(func() serializer.CodecFactory { return serializer.NewCodecFactory(Scheme) })

// CheckStorageMediaType reports whether mediaType is one --storage-media-type accepts.
func CheckStorageMediaType(mediaType string) error {
	if !slices.Contains(StorageMediaTypes, mediaType) {
		return fmt.Errorf("%q is not one of %s", mediaType, strings.Join(StorageMediaTypes, ", "))
	}
	return nil
}

// storageCodec is how one kind's objects are kept in etcd: written as mediaType (with the
// kind's apiVersion and kind in the value, as kube-apiserver writes them), read back from any
// encoding kube-apiserver or hacp ever wrote (the protobuf "k8s\x00" envelope, JSON with or
// without apiVersion/kind, YAML). A type without protobuf support (as custom resources will
// be) is written as JSON whatever mediaType says, as upstream does.
type storageCodec struct {
	encoder runtime.Encoder
	decoder runtime.Decoder
	// defaults, when set, are applied to every object read, as kube-apiserver's storage
	// decoder applies its defaulters: an object another writer stored without a field
	// the defaults fill (kube-apiserver stores a Job's labels or a claim's phase empty
	// and fills them on read) reads the same through either server.
	defaults func(runtime.Object)
}

// protobufType is what apimachinery's protobuf serializer needs of a type.
type protobufType interface {
	Marshal() ([]byte, error)
	Reset()
	Unmarshal([]byte) error
}

// StorageCodec is how the registry keeps k's objects in etcd when writing mediaType ("" is
// the default, protobuf); for tests and tools that read or write etcd beside a registry.
func StorageCodec(mediaType string, k *Kind) (storage.Codec, error) {
	return newStorageCodec(mediaType, k.GVK(), k.New)
}

func newStorageCodec(mediaType string, gvk schema.GroupVersionKind, newObj func() runtime.Object) (storage.Codec, error) {
	if mediaType == "" {
		mediaType = StorageProtobuf
	}
	if _, ok := newObj().(protobufType); !ok && mediaType == StorageProtobuf {
		mediaType = StorageJSON
	}
	if err := CheckStorageMediaType(mediaType); err != nil {
		return nil, err
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs().SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, fmt.Errorf("no serializer for storage media type %q", mediaType)
	}
	return &storageCodec{
		encoder: runtime.WithVersionEncoder{Version: gvk.GroupVersion(), Encoder: info.Serializer, ObjectTyper: Scheme},
		decoder: runtime.WithoutVersionDecoder{Decoder: codecs().UniversalDeserializer()},
	}, nil
}

func (c *storageCodec) Encode(obj runtime.Object) ([]byte, error) {
	return runtime.Encode(c.encoder, obj)
}

// Decode reads data into into, which it empties first; a value of another kind is an error.
func (c *storageCodec) Decode(data []byte, into runtime.Object) error {
	if len(data) == 0 {
		return errors.New("empty value")
	}
	if v := reflect.ValueOf(into); v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().Set(reflect.Zero(v.Elem().Type()))
	}
	out, gvk, err := c.decoder.Decode(data, nil, into)
	if err != nil {
		return err
	}
	if out != into {
		if err := convertStored(out, gvk, into); err != nil {
			return err
		}
	}
	if c.defaults != nil {
		c.defaults(into)
	}
	return nil
}

// sameFields are kinds whose stored older version has the served version's fields (a
// PodCertificateRequest's v1beta1 has two more, deprecated and unused by v1 clients): kube-apiserver
// 1.33 stored IPAddresses and ServiceCIDRs as v1beta1, 1.37 stores ClusterTrustBundles,
// PodCertificateRequests and StorageVersionMigrations as v1beta1 and DeviceTaintRules as v1beta2.
var sameFields = map[schema.GroupKind]bool{
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                     true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                   true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:          true,
	{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}:       true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}: true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                 true,
}

// convertStored converts a value stored at another version of into's kind (through the
// internal version, where the scheme knows one) into into.
func convertStored(out runtime.Object, gvk *schema.GroupVersionKind, into runtime.Object) error {
	want, _, err := Scheme.ObjectKinds(into)
	if err != nil || gvk == nil || want[0].GroupKind() != gvk.GroupKind() {
		return fmt.Errorf("stored object is %v, not %T", gvk, into)
	}
	if internal, err := Scheme.ConvertToVersion(out, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}); err == nil {
		if err := Scheme.Convert(internal, into, nil); err != nil {
			return fmt.Errorf("stored object is %v: %w", gvk, err)
		}
	} else if sameFields[gvk.GroupKind()] {
		// No internal version known: the two versions have the same fields.
		b, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("stored object is %v: %w", gvk, err)
		}
		if err := json.Unmarshal(b, into); err != nil {
			return fmt.Errorf("stored object is %v: %w", gvk, err)
		}
	} else {
		return fmt.Errorf("stored object is %v: %w", gvk, err)
	}
	into.GetObjectKind().SetGroupVersionKind(want[0])
	return nil
}
