package tableconvert

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers of core/v1 PersistentVolumes, PersistentVolumeClaims, ResourceQuotas,
// LimitRanges and ComponentStatuses, as kube-apiserver 1.33's.
func init() {
	pvDocs := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	register(&corev1.PersistentVolumeList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Capacity", "string", pvDocs["capacity"]),
		col("Access Modes", "string", pvDocs["accessModes"]),
		col("Reclaim Policy", "string", pvDocs["persistentVolumeReclaimPolicy"]),
		col("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		col("Claim", "string", pvDocs["claimRef"]),
		col("StorageClass", "string", "StorageClass of the pv"),
		col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		col("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		ageColumn(),
		wide("VolumeMode", "string", pvDocs["volumeMode"]),
	}, func(pv *corev1.PersistentVolume, now time.Time) ([]any, []metav1.TableRowCondition) {
		claim := ""
		if r := pv.Spec.ClaimRef; r != nil {
			claim = r.Namespace + "/" + r.Name
		}
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		class := pv.Spec.StorageClassName
		if a, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			class = a
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		return []any{pv.Name, size.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy), phase, claim,
			class, unsetIfNil(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, age(pv.CreationTimestamp, now), volumeMode(pv.Spec.VolumeMode)}, nil
	})

	pvcDocs := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()
	register(&corev1.PersistentVolumeClaimList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		col("Volume", "string", pvcDocs["volumeName"]),
		col("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		col("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		col("StorageClass", "string", "StorageClass of the pvc"),
		col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
		ageColumn(),
		wide("VolumeMode", "string", pvcDocs["volumeMode"]),
	}, func(pvc *corev1.PersistentVolumeClaim, now time.Time) ([]any, []metav1.TableRowCondition) {
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			modes = accessModes(pvc.Status.AccessModes)
			q := pvc.Status.Capacity[corev1.ResourceStorage]
			capacity = q.String()
		}
		class := ""
		if a, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			class = a
		} else if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		return []any{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, unsetIfNil(pvc.Spec.VolumeAttributesClassName),
			age(pvc.CreationTimestamp, now), volumeMode(pvc.Spec.VolumeMode)}, nil
	})

	register(&corev1.ResourceQuotaList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
		col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
		ageColumn(),
	}, func(q *corev1.ResourceQuota, now time.Time) ([]any, []metav1.TableRowCondition) {
		names := make([]string, 0, len(q.Status.Hard))
		for n := range q.Status.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		var req, lim []string
		for _, n := range names {
			used, hard := q.Status.Used[corev1.ResourceName(n)], q.Status.Hard[corev1.ResourceName(n)]
			cell := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
			if p := strings.Split(n, "."); len(p) > 1 && p[0] == "limits" {
				lim = append(lim, cell)
			} else {
				req = append(req, cell)
			}
		}
		return []any{q.Name, strings.Join(req, ", "), strings.Join(lim, ", "), age(q.CreationTimestamp, now)}, nil
	})

	// LimitRange has no printer upstream: kube-apiserver's default table, NAME and CREATED AT.
	register(&corev1.LimitRangeList{}, createdAtColumns(), func(l *corev1.LimitRange, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{l.Name, createdAt(l.CreationTimestamp)}, nil
	})

	register(&corev1.ComponentStatusList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "Status of the component conditions"),
		col("Message", "string", "Message of the component conditions"),
		col("Error", "string", "Error of the component conditions"),
	}, func(cs *corev1.ComponentStatus, now time.Time) ([]any, []metav1.TableRowCondition) {
		status, msg, errMsg := "Unknown", "", ""
		for _, c := range cs.Conditions {
			if c.Type == corev1.ComponentHealthy {
				status = "Unhealthy"
				if c.Status == corev1.ConditionTrue {
					status = "Healthy"
				}
				msg, errMsg = c.Message, c.Error
				break
			}
		}
		return []any{cs.Name, status, msg, errMsg}, nil
	})
}

// accessModes is upstream's GetAccessModesAsString.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func unsetIfNil(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}
