package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// forValidation returns the metadata accessor a for upstream's ObjectMeta validation. A
// custom object's managedFields are read without the unstructured converter, whose
// reflection (and a JSON round trip of every entry's fieldsV1) cost a create of a custom
// resource more than the rest of its metadata's validation: see validationMeta.
func forValidation(a metav1.Object) metav1.Object {
	if u, ok := a.(*unstructured.Unstructured); ok {
		return validationMeta{u}
	}
	return a
}

// validationMeta is an unstructured object's metadata as ObjectMeta validation reads it.
type validationMeta struct{ *unstructured.Unstructured }

// GetManagedFields returns the entries with what validation reads (manager, operation,
// apiVersion, fieldsType, subresource) but neither time nor fieldsV1. It is the
// unstructured object's own GetManagedFields, less those two, whenever every entry is an
// object whose fields have the types the converter takes: anything else goes to that
// method, so that an entry it cannot convert empties the list as there.
func (m validationMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	if entries, ok := managedFieldsForValidation(m.Object); ok {
		return entries
	}
	return m.Unstructured.GetManagedFields()
}

func managedFieldsForValidation(obj map[string]any) ([]metav1.ManagedFieldsEntry, bool) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	v, found := md["managedFields"]
	if !found {
		return nil, true
	}
	items, ok := v.([]any)
	if !ok {
		return nil, false
	}
	entries := make([]metav1.ManagedFieldsEntry, len(items))
	for i, item := range items {
		e, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		str := func(key string, into *string) bool {
			v, found := e[key]
			if !found {
				return true
			}
			s, ok := v.(string)
			*into = s
			return ok
		}
		var op, fieldsType string
		ok = str("manager", &entries[i].Manager) && str("operation", &op) && str("apiVersion", &entries[i].APIVersion) &&
			str("fieldsType", &fieldsType) && str("subresource", &entries[i].Subresource)
		if !ok {
			return nil, false
		}
		entries[i].Operation, entries[i].FieldsType = metav1.ManagedFieldsOperationType(op), fieldsType
		if t, found := e["time"]; found {
			s, ok := t.(string)
			if !ok {
				return nil, false
			}
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				return nil, false
			}
		}
	}
	return entries, true
}
