package tableconvert

import (
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The VolumeAttributesClass printer, as kube-apiserver 1.37's.
func init() {
	register(&storagev1.VolumeAttributesClassList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("DriverName", "string", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]),
		ageColumn(),
	}, func(c *storagev1.VolumeAttributesClass, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{c.Name, c.DriverName, age(c.CreationTimestamp, now)}, nil
	})
}

// Printers of storage.k8s.io, as kube-apiserver 1.37's.
func init() {
	scDocs := storagev1.StorageClass{}.SwaggerDoc()
	register(&storagev1.StorageClassList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Provisioner", "string", scDocs["provisioner"]),
		col("ReclaimPolicy", "string", scDocs["reclaimPolicy"]),
		col("VolumeBindingMode", "string", scDocs["volumeBindingMode"]),
		col("AllowVolumeExpansion", "string", scDocs["allowVolumeExpansion"]),
		ageColumn(),
	}, func(sc *storagev1.StorageClass, now time.Time) ([]any, []metav1.TableRowCondition) {
		name := sc.Name
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" || sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true" {
			name += " (default)"
		}
		reclaim := "Delete"
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		binding := string(storagev1.VolumeBindingImmediate)
		if sc.VolumeBindingMode != nil {
			binding = string(*sc.VolumeBindingMode)
		}
		expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return []any{name, sc.Provisioner, reclaim, binding, expand, age(sc.CreationTimestamp, now)}, nil
	})

	csiDocs := storagev1.CSIDriverSpec{}.SwaggerDoc()
	register(&storagev1.CSIDriverList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("AttachRequired", "boolean", csiDocs["attachRequired"]),
		col("PodInfoOnMount", "boolean", csiDocs["podInfoOnMount"]),
		col("StorageCapacity", "boolean", csiDocs["storageCapacity"]),
		col("TokenRequests", "string", csiDocs["tokenRequests"]),
		col("RequiresRepublish", "boolean", csiDocs["requiresRepublish"]),
		col("Modes", "string", csiDocs["volumeLifecycleModes"]),
		ageColumn(),
	}, func(d *storagev1.CSIDriver, now time.Time) ([]any, []metav1.TableRowCondition) {
		b := func(p *bool, def bool) bool {
			if p == nil {
				return def
			}
			return *p
		}
		var modes []string
		for _, m := range d.Spec.VolumeLifecycleModes {
			modes = append(modes, string(m))
		}
		tokens := "<unset>"
		if d.Spec.TokenRequests != nil {
			var auds []string
			for _, t := range d.Spec.TokenRequests {
				auds = append(auds, t.Audience)
			}
			tokens = strings.Join(auds, ",")
		}
		return []any{d.Name, b(d.Spec.AttachRequired, true), b(d.Spec.PodInfoOnMount, false), b(d.Spec.StorageCapacity, false),
			tokens, b(d.Spec.RequiresRepublish, false), orNone(strings.Join(modes, ",")), age(d.CreationTimestamp, now)}, nil
	})

	register(&storagev1.CSINodeList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
		ageColumn(),
	}, func(n *storagev1.CSINode, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp, now)}, nil
	})

	// CSIStorageCapacity has no printer upstream: kube-apiserver's default table.
	register(&storagev1.CSIStorageCapacityList{}, createdAtColumns(), func(c *storagev1.CSIStorageCapacity, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{c.Name, createdAt(c.CreationTimestamp)}, nil
	})

	vaDocs := storagev1.VolumeAttachmentSpec{}.SwaggerDoc()
	register(&storagev1.VolumeAttachmentList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Attacher", Type: "string", Format: "name", Description: vaDocs["attacher"]},
		col("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
		col("Node", "string", vaDocs["nodeName"]),
		col("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
		ageColumn(),
	}, func(va *storagev1.VolumeAttachment, now time.Time) ([]any, []metav1.TableRowCondition) {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, age(va.CreationTimestamp, now)}, nil
	})
}
