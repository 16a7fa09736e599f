package core

import (
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file is kube-apiserver 1.33's pod spec validation (k8s.io/kubernetes
// pkg/apis/core/validation: ValidatePodSpec and what it calls), written against the v1 types
// with upstream's field paths and messages, for pods and for every pod template (pod
// templates, replication controllers, replica sets, deployments, daemon sets, jobs, cron
// jobs). It runs after defaulting, as upstream's does. The options are those a new object
// gets with 1.33's default feature gates: relaxed environment variable names and DNS
// searches, a zero-second sleep action, sidecar containers, pod-level resources (podlevel.go;
// GA). --allow-privileged is taken as true, as kubeadm runs kube-apiserver.
// Left out: volume plugins nobody creates by hand are checked for their required fields
// only where listed below; topology spread constraints' matchLabelKeys and minDomains; pod
// affinity's matchLabelKeys; resource claims (DRA); Windows-specific options.

const (
	isNotPositiveErrorMsg = "must be greater than zero"
	fileModeErrorMsg      = "must be a number between 0 and 0777 (octal), both inclusive"
)

// podSpecOptions says what kind of object holds the spec.
type podSpecOptions struct {
	// resourceIsPod: the spec is a pod's, not a template's (host ports with hostNetwork,
	// image whitespace, projected token volumes without a service account).
	resourceIsPod bool
}

// validatePodSpec is upstream's ValidatePodSpec for a v1 pod spec at p.
func validatePodSpec(spec *corev1.PodSpec, p *field.Path, opts podSpecOptions) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(p.Child("terminationGracePeriodSeconds"), ""))
	}
	grace := spec.TerminationGracePeriodSeconds
	hostUsers := spec.HostUsers == nil || *spec.HostUsers

	vols, vErrs := validateVolumes(spec.Volumes, p.Child("volumes"))
	errs = append(errs, vErrs...)
	errs = append(errs, validateContainers(spec.Containers, vols, grace, p.Child("containers"), spec.RestartPolicy, hostUsers)...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, vols, grace, p.Child("initContainers"), spec.RestartPolicy, hostUsers)...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, vols, p.Child("ephemeralContainers"), spec.RestartPolicy, hostUsers)...)
	errs = append(errs, validatePodResources(spec, p)...)
	errs = append(errs, validatePodHostNetworkDeps(spec, p, opts)...)

	errs = append(errs, validateRestartAndDNSPolicy(spec, p)...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, p.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, p.Child("securityContext"))...)
	errs = append(errs, validateAffinity(spec.Affinity, p.Child("affinity"))...)
	errs = append(errs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, p.Child("dnsConfig"))...)
	errs = append(errs, validatePodGates(spec, p)...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, p.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateHostUsers(spec, p)...)
	errs = append(errs, validatePodSpecSettings(spec, p)...)
	errs = append(errs, validatePodOrTemplate(spec, p, opts)...)
	return errs
}

// validateRestartAndDNSPolicy checks a pod spec's restartPolicy and dnsPolicy.
func validateRestartAndDNSPolicy(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case "":
		errs = append(errs, field.Required(p.Child("restartPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	switch spec.DNSPolicy {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
	case "":
		errs = append(errs, field.Required(p.Child("dnsPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("dnsPolicy"), spec.DNSPolicy,
			[]corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}))
	}
	return errs
}

// validatePodGates checks a pod spec's readiness and scheduling gates.
func validatePodGates(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range spec.ReadinessGates {
		errs = append(errs, registry.ValidateQualifiedName(string(g.ConditionType), p.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	gates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		gp := p.Child("schedulingGates").Index(i)
		errs = append(errs, registry.ValidateQualifiedName(g.Name, gp)...)
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(gp, g.Name))
		}
		gates.Insert(g.Name)
	}
	return errs
}

// validatePodSpecSettings checks the pod spec's names (service account, node, host,
// priority and runtime class), deadline, tolerations, host aliases, preemption policy,
// overhead and OS.
func validatePodSpecSettings(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ServiceAccountName != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(p.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if spec.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), spec.NodeName, msg))
		}
	}
	if v := spec.ActiveDeadlineSeconds; v != nil && (*v < 1 || *v > math.MaxInt32) {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *v, utilvalidation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, p.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, p.Child("subdomain"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, p.Child("tolerations"))...)
	for i, a := range spec.HostAliases {
		ap := p.Child("hostAliases").Index(i)
		errs = append(errs, utilvalidation.IsValidIP(ap.Child("ip"), a.IP)...)
		for j, h := range a.Hostnames {
			errs = append(errs, registry.ValidateDNS1123Subdomain(h, ap.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.PriorityClassName, false) {
			errs = append(errs, field.Invalid(p.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	if spec.RuntimeClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.RuntimeClassName, false) {
			errs = append(errs, field.Invalid(p.Child("runtimeClassName"), *spec.RuntimeClassName, msg))
		}
	}
	if pp := spec.PreemptionPolicy; pp != nil {
		switch *pp {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(p.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("preemptionPolicy"), pp, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, p.Child("overhead"))...)
	}
	if os := spec.OS; os != nil {
		switch {
		case os.Name == "":
			errs = append(errs, field.Required(p.Child("os", "name"), "cannot be empty"))
		case os.Name != corev1.Linux && os.Name != corev1.Windows:
			errs = append(errs, field.NotSupported(p.Child("os"), os.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		}
	}
	return errs
}

// validatePodOrTemplate adds the checks of a pod's own spec (upstream's
// validatePodMetadataAndSpec) or of a template's (ValidatePodTemplateSpec).
func validatePodOrTemplate(spec *corev1.PodSpec, p *field.Path, opts podSpecOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.resourceIsPod {
		// validatePodMetadataAndSpec's checks for pods only
		if spec.ServiceAccountName == "" {
			for vi, v := range spec.Volumes {
				if v.Projected == nil {
					continue
				}
				for si, src := range v.Projected.Sources {
					if src.ServiceAccountToken != nil {
						errs = append(errs, field.Forbidden(p.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
							"must not be specified when serviceAccountName is not set"))
					}
				}
			}
		}
		for _, l := range []struct {
			cs   []corev1.Container
			name string
		}{{spec.Containers, "containers"}, {spec.InitContainers, "initContainers"}} {
			for i, c := range l.cs {
				errs = append(errs, validateImageWhitespace(c.Image, p.Child(l.name).Index(i).Child("image"))...)
			}
		}
	} else if len(spec.EphemeralContainers) > 0 {
		// upstream's ValidatePodTemplateSpec
		errs = append(errs, field.Forbidden(p.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

func validateImageWhitespace(image string, p *field.Path) field.ErrorList {
	if len(image) != len(strings.TrimSpace(image)) {
		return field.ErrorList{field.Invalid(p, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

func validateDNS1123Label(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// validateVolumes returns the volumes that are valid, by name, for the mounts to refer to.
func validateVolumes(volumes []corev1.Volume, p *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	vols := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		vp := p.Index(i)
		np := vp.Child("name")
		el := validateVolumeSource(&v.VolumeSource, vp)
		if v.Name == "" {
			el = append(el, field.Required(np, ""))
		} else {
			el = append(el, validateDNS1123Label(v.Name, np)...)
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(np, v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
			vols[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, el...)
		}
	}
	return vols, errs
}

// validateVolumeSource is upstream's: exactly one source, and each source's own rules (the
// common ones in full; the in-tree cloud and network plugins for their required fields).
func validateVolumeSource(s *corev1.VolumeSource, p *field.Path) field.ErrorList {
	v := &volumeSources{p: p}
	v.localAndCloudDisks(s)
	v.networkAndProjected(s)
	v.pluginsAndCSI(s)
	if v.n == 0 {
		v.errs = append(v.errs, field.Required(p, "must specify a volume type"))
	}
	return v.errs
}

// volumeSources walks the sources of one volume in upstream's order: the first set is
// checked, any further one is reported as Forbidden.
type volumeSources struct {
	p    *field.Path
	n    int // sources seen
	errs field.ErrorList
}

// one reports a further source as Forbidden, or counts it and runs its checks.
func (v *volumeSources) one(set bool, name string, check func(*field.Path) field.ErrorList) {
	if !set {
		return
	}
	if v.n > 0 {
		v.errs = append(v.errs, field.Forbidden(v.p.Child(name), "may not specify more than 1 volume type"))
		return
	}
	v.n++
	if check != nil {
		v.errs = append(v.errs, check(v.p.Child(name))...)
	}
}

// requiredFields returns a check that each of fields, given their values, is set.
func requiredFields(fields ...string) func(vals ...string) func(*field.Path) field.ErrorList {
	return func(vals ...string) func(*field.Path) field.ErrorList {
		return func(fp *field.Path) field.ErrorList {
			var errs field.ErrorList
			for i, f := range fields {
				if vals[i] == "" {
					errs = append(errs, field.Required(fp.Child(f), ""))
				}
			}
			return errs
		}
	}
}

// localAndCloudDisks checks emptyDir, hostPath, gitRepo, the cloud disks, secret, nfs,
// iscsi, glusterfs, flocker and persistentVolumeClaim.
func (v *volumeSources) localAndCloudDisks(s *corev1.VolumeSource) {
	v.one(s.EmptyDir != nil, "emptyDir", func(fp *field.Path) field.ErrorList {
		if l := s.EmptyDir.SizeLimit; l != nil && l.Cmp(resource.Quantity{}) < 0 {
			return field.ErrorList{field.Forbidden(fp.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity")}
		}
		return nil
	})
	v.one(s.HostPath != nil, "hostPath", func(fp *field.Path) field.ErrorList {
		if s.HostPath.Path == "" {
			return field.ErrorList{field.Required(fp.Child("path"), "")}
		}
		errs := validatePathNoBacksteps(s.HostPath.Path, fp.Child("path"))
		if t := s.HostPath.Type; t != nil && !supportedHostPathTypes.Has(*t) {
			errs = append(errs, field.NotSupported(fp.Child("type"), t, sets.List(supportedHostPathTypes)))
		}
		return errs
	})
	v.one(s.GitRepo != nil, "gitRepo", func(fp *field.Path) field.ErrorList {
		var errs field.ErrorList
		if s.GitRepo.Repository == "" {
			errs = append(errs, field.Required(fp.Child("repository"), ""))
		}
		return append(errs, validateLocalDescendingPath(s.GitRepo.Directory, fp.Child("directory"))...)
	})
	v.one(s.GCEPersistentDisk != nil, "gcePersistentDisk", func(*field.Path) field.ErrorList {
		// upstream reports these under "persistentDisk"
		fp := v.p.Child("persistentDisk")
		var errs field.ErrorList
		if s.GCEPersistentDisk.PDName == "" {
			errs = append(errs, field.Required(fp.Child("pdName"), ""))
		}
		if pt := s.GCEPersistentDisk.Partition; pt < 0 || pt > 255 {
			errs = append(errs, field.Invalid(fp.Child("partition"), pt, utilvalidation.InclusiveRangeError(1, 255)))
		}
		return errs
	})
	if s.AWSElasticBlockStore != nil {
		v.one(true, "awsElasticBlockStore", func(fp *field.Path) field.ErrorList {
			errs := requiredFields("volumeID")(s.AWSElasticBlockStore.VolumeID)(fp)
			if pt := s.AWSElasticBlockStore.Partition; pt < 0 || pt > 255 {
				errs = append(errs, field.Invalid(fp.Child("partition"), pt, utilvalidation.InclusiveRangeError(1, 255)))
			}
			return errs
		})
	}
	v.one(s.Secret != nil, "secret", func(fp *field.Path) field.ErrorList {
		return validateKeyedVolume(fp, "secretName", s.Secret.SecretName, s.Secret.DefaultMode, s.Secret.Items)
	})
	if s.NFS != nil {
		v.one(true, "nfs", func(fp *field.Path) field.ErrorList {
			errs := requiredFields("server", "path")(s.NFS.Server, s.NFS.Path)(fp)
			if !path.IsAbs(s.NFS.Path) {
				errs = append(errs, field.Invalid(fp.Child("path"), s.NFS.Path, "must be an absolute path"))
			}
			return errs
		})
	}
	if s.ISCSI != nil {
		v.one(true, "iscsi", func(fp *field.Path) field.ErrorList {
			return requiredFields("targetPortal", "iqn")(s.ISCSI.TargetPortal, s.ISCSI.IQN)(fp)
		})
	}
	if s.Glusterfs != nil {
		v.one(true, "glusterfs", func(fp *field.Path) field.ErrorList {
			return requiredFields("endpoints", "path")(s.Glusterfs.EndpointsName, s.Glusterfs.Path)(fp)
		})
	}
	v.one(s.Flocker != nil, "flocker", nil)
	v.one(s.PersistentVolumeClaim != nil, "persistentVolumeClaim", func(fp *field.Path) field.ErrorList {
		if s.PersistentVolumeClaim.ClaimName == "" {
			return field.ErrorList{field.Required(fp.Child("claimName"), "")}
		}
		return nil
	})
}

// networkAndProjected checks rbd, cinder, cephFS, quobyte, downwardAPI.
func (v *volumeSources) networkAndProjected(s *corev1.VolumeSource) {
	if s.RBD != nil {
		v.one(true, "rbd", func(fp *field.Path) field.ErrorList {
			var errs field.ErrorList
			if len(s.RBD.CephMonitors) == 0 {
				errs = append(errs, field.Required(fp.Child("monitors"), ""))
			}
			return append(errs, requiredFields("image")(s.RBD.RBDImage)(fp)...)
		})
	}
	if s.Cinder != nil {
		v.one(true, "cinder", func(fp *field.Path) field.ErrorList { return requiredFields("volumeID")(s.Cinder.VolumeID)(fp) })
	}
	if s.CephFS != nil {
		v.one(true, "cephFS", func(*field.Path) field.ErrorList {
			if len(s.CephFS.Monitors) == 0 {
				return field.ErrorList{field.Required(v.p.Child("cephfs", "monitors"), "")}
			}
			return nil
		})
	}
	v.one(s.Quobyte != nil, "quobyte", nil)
	if s.DownwardAPI != nil {
		// upstream's typo: a second source is reported under "downwarAPI"
		if v.n > 0 {
			v.errs = append(v.errs, field.Forbidden(v.p.Child("downwarAPI"), "may not specify more than 1 volume type"))
		} else {
			v.n++
			fp := v.p.Child("downwardAPI")
			v.errs = append(v.errs, validateFileMode(s.DownwardAPI.DefaultMode, fp.Child("defaultMode"))...)
			for i := range s.DownwardAPI.Items {
				v.errs = append(v.errs, validateDownwardAPIVolumeFile(&s.DownwardAPI.Items[i], fp)...)
			}
		}
	}
}

// pluginsAndCSI checks fc, flexVolume, configMap, the Azure, vSphere, Photon, Portworx,
// StorageOS and ScaleIO volumes, projected, csi, ephemeral and image.
func (v *volumeSources) pluginsAndCSI(s *corev1.VolumeSource) {
	v.one(s.FC != nil, "fc", nil)
	if s.FlexVolume != nil {
		v.one(true, "flexVolume", func(fp *field.Path) field.ErrorList { return requiredFields("driver")(s.FlexVolume.Driver)(fp) })
	}
	v.one(s.ConfigMap != nil, "configMap", func(fp *field.Path) field.ErrorList {
		return validateKeyedVolume(fp, "name", s.ConfigMap.Name, s.ConfigMap.DefaultMode, s.ConfigMap.Items)
	})
	if s.AzureFile != nil {
		v.one(true, "azureFile", func(fp *field.Path) field.ErrorList {
			return requiredFields("secretName", "shareName")(s.AzureFile.SecretName, s.AzureFile.ShareName)(fp)
		})
	}
	v.one(s.VsphereVolume != nil, "vsphereVolume", nil)
	v.one(s.PhotonPersistentDisk != nil, "photonPersistentDisk", nil)
	v.one(s.PortworxVolume != nil, "portworxVolume", nil)
	if s.AzureDisk != nil {
		v.one(true, "azureDisk", func(fp *field.Path) field.ErrorList {
			return requiredFields("diskName", "diskURI")(s.AzureDisk.DiskName, s.AzureDisk.DataDiskURI)(fp)
		})
	}
	v.one(s.StorageOS != nil, "storageos", nil)
	v.one(s.Projected != nil, "projected", func(fp *field.Path) field.ErrorList {
		errs := validateFileMode(s.Projected.DefaultMode, fp.Child("defaultMode"))
		return append(errs, validateProjectionSources(s.Projected, fp)...)
	})
	v.one(s.ScaleIO != nil, "scaleIO", nil)
	if s.CSI != nil {
		v.one(true, "csi", func(fp *field.Path) field.ErrorList {
			if s.CSI.Driver == "" {
				return field.ErrorList{field.Required(fp.Child("driver"), "")}
			}
			return nil
		})
	}
	if s.Ephemeral != nil {
		v.one(true, "ephemeral", func(fp *field.Path) field.ErrorList {
			if s.Ephemeral.VolumeClaimTemplate == nil {
				return field.ErrorList{field.Required(fp.Child("volumeClaimTemplate"), "")}
			}
			return nil
		})
	}
	v.one(s.Image != nil, "image", nil)
}

var supportedHostPathTypes = sets.New(corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev)

func validateFileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validateKeyedVolume checks a secret or configMap volume source: the object it names (its
// name field is nameField), its default mode and the keys it projects.
func validateKeyedVolume(fp *field.Path, nameField, name string, mode *int32, items []corev1.KeyToPath) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fp.Child(nameField), ""))
	}
	errs = append(errs, validateFileMode(mode, fp.Child("defaultMode"))...)
	for i := range items {
		errs = append(errs, validateKeyToPath(&items[i], fp.Child("items").Index(i))...)
	}
	return errs
}

func validateKeyToPath(kp *corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(kp.Path, p.Child("path"))...)
	return append(errs, validateFileMode(kp.Mode, p.Child("mode"))...)
}

var validVolumeDownwardAPIFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid")

func validateDownwardAPIVolumeFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, p.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, validVolumeDownwardAPIFieldPaths, p.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateContainerResourceFieldSelector(f.ResourceFieldRef, p.Child("resourceFieldRef"), true)...)
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(f.Mode, p.Child("mode"))...)
}

func validateProjectionSources(proj *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	addPath := func(pth string, v any) {
		if pth == "" {
			return
		}
		if paths.Has(pth) {
			errs = append(errs, field.Invalid(p, v, "conflicting duplicate paths"))
		}
		paths.Insert(pth)
	}
	for i, src := range proj.Sources {
		n := 0
		sp := p.Child("sources").Index(i)
		// A secret or configMap source: a name, and items each a key to a path.
		keysToPaths := func(pp *field.Path, name string, items []corev1.KeyToPath) {
			n++
			if name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			for j := range items {
				errs = append(errs, validateKeyToPath(&items[j], pp.Child("items").Index(j))...)
				addPath(items[j].Path, name)
			}
		}
		if s := src.Secret; s != nil {
			keysToPaths(sp.Child("secret"), s.Name, s.Items)
		}
		if c := src.ConfigMap; c != nil {
			keysToPaths(sp.Child("configMap"), c.Name, c.Items)
		}
		if d := src.DownwardAPI; d != nil {
			n++
			for j := range d.Items {
				errs = append(errs, validateDownwardAPIVolumeFile(&d.Items[j], sp.Child("downwardAPI"))...)
				addPath(d.Items[j].Path, d.Items[j].Path)
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			pp := sp.Child("serviceAccountToken")
			exp := int64(0)
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			if exp < 10*60 {
				errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
			}
			if exp > 1<<32 {
				errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
			}
			// upstream reports the path at the volume, not the source
			if t.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, p.Child("path"))...)
			}
		}
		if b := src.ClusterTrustBundle; b != nil {
			n++
			pp := sp.Child("clusterTrustBundle")
			switch {
			case b.Name != nil && b.SignerName != nil:
				errs = append(errs, field.Invalid(pp, b, "only one of name and signerName may be used"))
			case b.Name != nil:
				if *b.Name == "" {
					errs = append(errs, field.Required(pp.Child("name"), "must be a valid object name"))
				}
			case b.SignerName != nil:
				if *b.SignerName == "" {
					errs = append(errs, field.Required(pp.Child("signerName"), "must be a valid signer name"))
				}
			default:
				errs = append(errs, field.Required(pp, "either name or signerName must be specified"))
			}
			if b.Path == "" {
				errs = append(errs, field.Required(pp.Child("path"), ""))
			}
			errs = append(errs, validateLocalNonReservedPath(b.Path, pp.Child("path"))...)
			addPath(b.Path, b.Path)
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateLocalDescendingPath: relative, without "..".
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, p)...)
}

func validatePathNoBacksteps(target string, p *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}

func validateLocalNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, p)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

// validateContainers is upstream's for regular containers.
func validateContainers(cs []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, p *field.Path, restart corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	if len(cs) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range cs {
		c := &cs[i]
		cp := p.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, cp, restart, hostUsers)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, grace, cp.Child("lifecycle"))...)
		}
		errs = append(errs, validateProbes(c, grace, cp)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(cp.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return append(errs, checkHostPortConflicts(cs, p)...)
}

// validateInitContainers is upstream's: an init container with restartPolicy Always is a
// sidecar and may have probes and lifecycle hooks; the others may not.
func validateInitContainers(cs, regular []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, p *field.Path, restart corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range cs {
		c := &cs[i]
		cp := p.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, cp, restart, hostUsers)...)
		sidecar := false
		if rp := c.RestartPolicy; rp != nil {
			if *rp != corev1.ContainerRestartPolicyAlways {
				errs = append(errs, field.NotSupported(cp.Child("restartPolicy"), *rp, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
			sidecar = *rp == corev1.ContainerRestartPolicyAlways
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		errs = append(errs, checkHostPortConflicts([]corev1.Container{*c}, p)...)
		if sidecar {
			if c.Lifecycle != nil {
				errs = append(errs, validateLifecycle(c.Lifecycle, grace, cp.Child("lifecycle"))...)
			}
			errs = append(errs, validateProbes(c, grace, cp)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(cp.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(cp.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(cp.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(cp.Child("startupProbe"), msg))
		}
	}
	return errs
}

// validateEphemeralContainers checks what a pod's ephemeral containers share with the others
// (names, mounts, env); the fields they may not set at all are refused by the
// ephemeralcontainers subresource.
func validateEphemeralContainers(ecs []corev1.EphemeralContainer, cs, inits []corev1.Container, vols map[string]corev1.VolumeSource, p *field.Path, restart corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	if len(ecs) == 0 {
		return nil
	}
	var errs field.ErrorList
	others, all := sets.New[string](), sets.New[string]()
	for _, c := range append(append([]corev1.Container{}, cs...), inits...) {
		others.Insert(c.Name)
		all.Insert(c.Name)
	}
	for i := range ecs {
		ec := &ecs[i]
		ep := p.Index(i)
		c := corev1.Container(ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(&c, vols, ep, restart, hostUsers)...)
		errs = append(errs, validateImageWhitespace(c.Image, ep.Child("image"))...)
		if all.Has(ec.Name) {
			errs = append(errs, field.Duplicate(ep.Child("name"), ec.Name))
		} else {
			all.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(ep.Child("targetContainerName"), ec.TargetContainerName))
		}
	}
	return errs
}

func validateContainerCommon(c *corev1.Container, vols map[string]corev1.VolumeSource, p *field.Path, restart corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, devices, vols, c, p.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c.VolumeDevices, mounts, vols, p.Child("volumeDevices"))...)
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(p.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	errs = append(errs, validateResourceRequirements(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, p.Child("resizePolicy"), restart)...)
	return append(errs, validateSecurityContext(c.SecurityContext, p.Child("securityContext"), hostUsers)...)
}

func validateContainerPorts(ports []corev1.ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		if port.Name != "" {
			if msgs := utilvalidation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, msg))
			}
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		} else {
			errs = append(errs, registry.ValidateProtocol(port.Protocol, pp.Child("protocol"))...)
		}
	}
	return errs
}

// checkHostPortConflicts refuses one protocol/hostIP/hostPort twice.
func checkHostPortConflicts(cs []corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range cs {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			k := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(k) {
				errs = append(errs, field.Duplicate(p.Index(ci).Child("ports").Index(pi).Child("hostPort"), k))
			}
			seen.Insert(k)
		}
	}
	return errs
}

// validateEnv uses 1.33's relaxed names (RelaxedEnvironmentVariableValidation, on by default):
// any printable ASCII but '='.
func validateEnv(vars []corev1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		ep := p.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(ep.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, ep.Child("valueFrom"))...)
	}
	return errs
}

var validEnvDownwardAPIFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

func validateEnvVarValueFrom(ev corev1.EnvVar, p *field.Path) field.ErrorList {
	vf := ev.ValueFrom
	if vf == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(vf.FieldRef, validEnvDownwardAPIFieldPaths, p.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateContainerResourceFieldSelector(vf.ResourceFieldRef, p.Child("resourceFieldRef"), false)...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, p.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, p.Child("secretKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateKeySelector(name, key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p.Child("name"), name, msg))
	}
	if key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		for _, msg := range utilvalidation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(p.Child("key"), key, msg))
		}
	}
	return errs
}

// validateObjectFieldSelector: v1 is the only version whose field labels convert, as
// upstream's ConvertDownwardAPIFieldLabel.
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, valid sets.Set[string], p *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	fp := fs.FieldPath
	if i := strings.Index(fp, "['"); i > 0 && strings.HasSuffix(fp, "']") {
		base, sub := fp[:i], fp[i+2:len(fp)-2]
		switch base {
		case "metadata.annotations":
			return registry.ValidateQualifiedName(strings.ToLower(sub), p)
		case "metadata.labels":
			return registry.ValidateQualifiedName(sub, p)
		default:
			return field.ErrorList{field.Invalid(p, base, "does not support subscript")}
		}
	}
	switch fp {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
	default:
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fp,
			fmt.Sprintf("error converting fieldPath: field label not supported: %s", fp))}
	}
	if !valid.Has(fp) {
		return field.ErrorList{field.NotSupported(p.Child("fieldPath"), fp, sets.List(valid))}
	}
	return nil
}

var validContainerResourceFieldPaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage")

func validateContainerResourceFieldSelector(fs *corev1.ResourceFieldSelector, p *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(p.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(p.Child("resource"), ""))
	case !validContainerResourceFieldPaths.Has(fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		errs = append(errs, field.NotSupported(p.Child("resource"), fs.Resource, sets.List(validContainerResourceFieldPaths)))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	d := fs.Divisor.String()
	units := sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
	dp := p.Child("divisor")
	switch fs.Resource {
	case "limits.cpu", "requests.cpu":
		if d != "1m" && d != "1" {
			errs = append(errs, field.Invalid(dp, fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !units.Has(d) {
			errs = append(errs, field.Invalid(dp, fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !units.Has(d) {
			errs = append(errs, field.Invalid(dp, fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
		}
	}
	if (strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-")) && !units.Has(d) {
		errs = append(errs, field.Invalid(dp, fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
	}
	return errs
}

func validateEnvFrom(vars []corev1.EnvFromSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		ep := p.Index(i)
		if ev.Prefix != "" {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(ep.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		ref := func(name string, rp *field.Path) {
			n++
			if name == "" {
				errs = append(errs, field.Required(rp.Child("name"), ""))
				return
			}
			for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
				errs = append(errs, field.Invalid(rp.Child("name"), name, msg))
			}
		}
		if ev.ConfigMapRef != nil {
			ref(ev.ConfigMapRef.Name, ep.Child("configMapRef"))
		}
		if ev.SecretRef != nil {
			ref(ev.SecretRef.Name, ep.Child("secretRef"))
		}
		// upstream reports these at the list, not the entry
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, devices map[string]string, vols map[string]corev1.VolumeSource, c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	points := sets.New[string]()
	for i, m := range mounts {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
		if points.Has(m.MountPath) {
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		points.Insert(m.MountPath)
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(mp.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, dp := range devices {
			if dp == m.MountPath {
				errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
				break
			}
		}
		if v, ok := vols[m.Name]; ok && v.Image != nil {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(mp.Child("subPath"), m.SubPath, "not allowed in image volume sources"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		// upstream reports subPath, subPathExpr, mountPropagation and recursiveReadOnly at the
		// list's path, not the mount's
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		if mpg := m.MountPropagation; mpg != nil {
			pp := p.Child("mountPropagation")
			supported := []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
			switch *mpg {
			case corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone:
			default:
				errs = append(errs, field.NotSupported(pp, *mpg, supported))
			}
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if *mpg == corev1.MountPropagationBidirectional && !privileged {
				errs = append(errs, field.Forbidden(pp, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		if rro := m.RecursiveReadOnly; rro != nil {
			rp := p.Child("recursiveReadOnly")
			switch *rro {
			case corev1.RecursiveReadOnlyDisabled:
			case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
				if !m.ReadOnly {
					errs = append(errs, field.Forbidden(rp, "may only be specified when readOnly is true"))
				}
				if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
					errs = append(errs, field.Forbidden(rp, "may only be specified when mountPropagation is None or not specified"))
				}
			default:
				errs = append(errs, field.NotSupported(rp, *rro, []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
			}
		}
	}
	return errs
}

func validateVolumeDevices(devs []corev1.VolumeDevice, mounts map[string]string, vols map[string]corev1.VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths, names := sets.New[string](), sets.New[string]()
	for i, d := range devs {
		dp := p.Index(i)
		src, matched := vols[d.Name]
		isPVC := matched && (src.PersistentVolumeClaim != nil || src.Ephemeral != nil)
		if d.Name == "" {
			errs = append(errs, field.Required(dp.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(dp.Child("name"), d.Name, "must be unique"))
		}
		if matched && !isPVC {
			errs = append(errs, field.Invalid(dp.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(dp.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(dp.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, dp)) > 0 {
			errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(d.DevicePath)
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(dp.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mp := range mounts {
			if mp == d.DevicePath {
				errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
				break
			}
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return errs
}

func validateProbes(c *corev1.Container, grace *int64, cp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, pr := range []struct {
		probe *corev1.Probe
		name  string
	}{{c.LivenessProbe, "livenessProbe"}, {c.ReadinessProbe, "readinessProbe"}, {c.StartupProbe, "startupProbe"}} {
		if pr.probe == nil {
			continue
		}
		pp := cp.Child(pr.name)
		errs = append(errs, validateProbe(pr.probe, grace, pp)...)
		switch pr.name {
		case "readinessProbe":
			if pr.probe.TerminationGracePeriodSeconds != nil {
				errs = append(errs, field.Invalid(pp.Child("terminationGracePeriodSeconds"), pr.probe.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
			}
		default:
			if pr.probe.SuccessThreshold != 1 {
				errs = append(errs, field.Invalid(pp.Child("successThreshold"), pr.probe.SuccessThreshold, "must be 1"))
			}
		}
	}
	return errs
}

func validateProbe(pr *corev1.Probe, grace *int64, p *field.Path) field.ErrorList {
	h := pr.ProbeHandler
	errs := validateHandler(h.Exec, h.HTTPGet, h.TCPSocket, h.GRPC, nil, grace, p)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.InitialDelaySeconds), p.Child("initialDelaySeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.TimeoutSeconds), p.Child("timeoutSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.PeriodSeconds), p.Child("periodSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.SuccessThreshold), p.Child("successThreshold"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.FailureThreshold), p.Child("failureThreshold"))...)
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, h := range []struct {
		h    *corev1.LifecycleHandler
		name string
	}{{l.PostStart, "postStart"}, {l.PreStop, "preStop"}} {
		if h.h != nil {
			errs = append(errs, validateHandler(h.h.Exec, h.h.HTTPGet, h.h.TCPSocket, nil, h.h.Sleep, grace, p.Child(h.name))...)
		}
	}
	return errs
}

// validateHandler is upstream's for probes and lifecycle hooks: exactly one handler.
func validateHandler(exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, check func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, check(p.Child(name))...)
	}
	one(exec != nil, "exec", func(hp *field.Path) field.ErrorList {
		if len(exec.Command) == 0 {
			return field.ErrorList{field.Required(hp.Child("command"), "")}
		}
		return nil
	})
	one(httpGet != nil, "httpGet", func(hp *field.Path) field.ErrorList {
		var errs field.ErrorList
		if httpGet.Path == "" {
			errs = append(errs, field.Required(hp.Child("path"), ""))
		}
		errs = append(errs, validatePortNumOrName(httpGet.Port, hp.Child("port"))...)
		if httpGet.Scheme != corev1.URISchemeHTTP && httpGet.Scheme != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(hp.Child("scheme"), httpGet.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
		for _, h := range httpGet.HTTPHeaders {
			for _, msg := range utilvalidation.IsHTTPHeaderName(h.Name) {
				errs = append(errs, field.Invalid(hp.Child("httpHeaders"), h.Name, msg))
			}
		}
		return errs
	})
	one(tcp != nil, "tcpSocket", func(hp *field.Path) field.ErrorList { return validatePortNumOrName(tcp.Port, hp.Child("port")) })
	one(grpc != nil, "grpc", func(hp *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(grpc.Port), hp.Child("port"))
	})
	one(sleep != nil, "sleep", func(hp *field.Path) field.ErrorList {
		// PodLifecycleSleepActionAllowZero is on by default in 1.33
		if grace != nil && (sleep.Seconds < 0 || sleep.Seconds > *grace) {
			return field.ErrorList{field.Invalid(hp, sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a handler type"))
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range utilvalidation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(p, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range utilvalidation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(p, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(p, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, p *field.Path, restart corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, rp := range policies {
		if seen[rp.ResourceName] {
			errs = append(errs, field.Duplicate(p.Index(i), rp.ResourceName))
		}
		seen[rp.ResourceName] = true
		switch rp.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(p, ""))
		default:
			errs = append(errs, field.NotSupported(p, rp.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch rp.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(p, ""))
		default:
			errs = append(errs, field.NotSupported(p, rp.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if restart == corev1.RestartPolicyNever && rp.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(p, rp.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// validateResourceRequirements is upstream's for containers (and, with limits only, for a
// pod's overhead): names, non-negative quantities, integers for extended resources, requests
// not above limits and equal to them for resources that cannot be overcommitted.
func validateResourceRequirements(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	return validateRequirements(r, p, validateContainerResourceName)
}

// validateRequirements is upstream's validateResourceRequirements with nameFn checking each
// resource name (a container's or the pod's).
func validateRequirements(r *corev1.ResourceRequirements, p *field.Path, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := p.Child("limits"), p.Child("requests")
	limCPUOrMem, reqCPUOrMem, limHuge, reqHuge := false, false, false, false
	for name, q := range r.Limits {
		fp := limPath.Key(string(name))
		errs = append(errs, nameFn(name, fp)...)
		errs = append(errs, validateResourceQuantityValue(name, q, fp)...)
		if isHugePageResourceName(name) {
			limHuge = true
			errs = append(errs, validateHugePageValue(name, q, fp)...)
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			limCPUOrMem = true
		}
	}
	for name, q := range r.Requests {
		fp := reqPath.Key(string(name))
		errs = append(errs, nameFn(name, fp)...)
		errs = append(errs, validateResourceQuantityValue(name, q, fp)...)
		if lim, ok := r.Limits[name]; ok {
			if q.Cmp(lim) != 0 && !isOvercommitAllowed(name) {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
			} else if q.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePageResourceName(name) {
			reqHuge = true
			errs = append(errs, validateHugePageValue(name, q, fp)...)
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			reqCPUOrMem = true
		}
	}
	if !limCPUOrMem && !reqCPUOrMem && (reqHuge || limHuge) {
		errs = append(errs, field.Forbidden(p, "HugePages require cpu or memory"))
	}
	for i, c := range r.Claims {
		// no pod resource claims are served (DRA), so every name is unknown
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("claims").Index(i), ""))
			continue
		}
		e := field.NotFound(p.Child("claims").Index(i), c.Name)
		e.Detail = "must be one of the names in pod.spec.resourceClaims which is empty"
		errs = append(errs, e)
	}
	return errs
}

func validateResourceQuantityValue(name corev1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if isExtendedResourceName(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(p, goSyntax{q}, "must be an integer"))
	}
	return errs
}

func validateHugePageValue(name corev1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err == nil && size.Sign() > 0 && q.Value()%size.Value() == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
}

// standardResourceNames is upstream's standardResources: what a name without a domain may be.
var standardResourceNames = sets.New("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
	"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
	"replicationcontrollers", "resourcequotas", "secrets", "persistentvolumeclaims", "storage", "requests.storage",
	"services.nodeports", "services.loadbalancers", "configmaps")

func validateContainerResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	v := string(name)
	errs := registry.ValidateQualifiedName(v, p)
	if len(errs) == 0 && !strings.Contains(v, "/") && !standardResourceNames.Has(v) && !isHugePageResourceName(name) &&
		!strings.HasPrefix(v, "requests.hugepages-") {
		errs = append(errs, field.Invalid(p, stringer(name), "must be a standard resource type or fully qualified"))
	}
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(v, "/") {
		if v != "cpu" && v != "memory" && v != "ephemeral-storage" && !isHugePageResourceName(name) {
			return append(errs, field.Invalid(p, stringer(name), "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResourceName(name) {
		return append(errs, field.Invalid(p, stringer(name), "doesn't follow extended resource name standard"))
	}
	return errs
}

// stringer and goSyntax make a field error print its value as kube-apiserver 1.33's
// apimachinery did (its String(), or Go syntax), where today's would print it as JSON:
// `Invalid value: pods` and `Invalid value: resource.Quantity{...}`, as upstream answers.
type stringer corev1.ResourceName

func (s stringer) String() string               { return string(s) }
func (s stringer) MarshalJSON() ([]byte, error) { return nil, errUpstreamFormat }

type goSyntax struct{ v any }

func (g goSyntax) GoString() string             { return fmt.Sprintf("%#v", g.v) }
func (g goSyntax) MarshalJSON() ([]byte, error) { return nil, errUpstreamFormat }

var errUpstreamFormat = errors.New("printed as upstream prints it")

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(utilvalidation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

// validateSecurityContext is upstream's for a container's security context.
func validateSecurityContext(sc *corev1.SecurityContext, p *field.Path, hostUsers bool) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range utilvalidation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range utilvalidation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if pm := sc.ProcMount; pm != nil {
		if *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(p.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if hostUsers && *pm == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(p.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfileField(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if string(c) == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(errs, validateAppArmorProfileField(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
}

func validatePodSecurityContext(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range utilvalidation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range utilvalidation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range utilvalidation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for i, g := range sc.SupplementalGroups {
		for _, msg := range utilvalidation.IsValidGroupID(g) {
			errs = append(errs, field.Invalid(p.Child("supplementalGroups").Index(i), g, msg))
		}
	}
	if spec.ShareProcessNamespace != nil && spec.HostPID && *spec.ShareProcessNamespace {
		errs = append(errs, field.Invalid(p.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if pol := sc.FSGroupChangePolicy; pol != nil && *pol != corev1.FSGroupChangeOnRootMismatch && *pol != corev1.FSGroupChangeAlways {
		errs = append(errs, field.NotSupported(p.Child("fsGroupChangePolicy"), pol, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
	}
	errs = append(errs, validateSeccompProfileField(sc.SeccompProfile, p.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfileField(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
	if pol := sc.SupplementalGroupsPolicy; pol != nil && *pol != corev1.SupplementalGroupsPolicyMerge && *pol != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(p.Child("supplementalGroupsPolicy"), pol, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
	}
	if pol := sc.SELinuxChangePolicy; pol != nil && *pol != corev1.SELinuxChangePolicyRecursive && *pol != corev1.SELinuxChangePolicyMountOption {
		errs = append(errs, field.NotSupported(p.Child("seLinuxChangePolicy"), *pol, []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}))
	}
	return errs
}

func validateSeccompProfileField(sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, p.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfileField(ap *corev1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	var errs field.ErrorList
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil {
			return field.ErrorList{field.Required(p.Child("localhostProfile"), "must be set when AppArmor type is Localhost")}
		}
		lp := strings.TrimSpace(*ap.LocalhostProfile)
		if lp != *ap.LocalhostProfile {
			errs = append(errs, field.Invalid(p.Child("localhostProfile"), *ap.LocalhostProfile, "must not be padded with whitespace"))
		} else if lp == "" {
			errs = append(errs, field.Required(p.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
		}
		if len(*ap.LocalhostProfile) > 4095 {
			errs = append(errs, field.TooLong(p.Child("localhostProfile"), "", 4095))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(p.Child("localhostProfile"), ap.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), ap.Type, []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

func validateHostUsers(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	// upstream's paths, capitals included
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(p.Child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(p.Child("HostPID"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(p.Child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
	}
	return errs
}

// validatePodHostNetworkDeps: with hostNetwork a container's hostPort must be its
// containerPort (in a template it may also be left 0, for the pod's defaulting to fill).
func validatePodHostNetworkDeps(spec *corev1.PodSpec, p *field.Path, opts podSpecOptions) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if hp, cp := port.HostPort, port.ContainerPort; (opts.resourceIsPod || hp != 0) && hp != cp {
				errs = append(errs, field.Invalid(p.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

func validateTolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := utilvalidation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(tp.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
			}
		}
	}
	return errs
}

func validatePodDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, p *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(p, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(p.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > 3 {
		errs = append(errs, field.Invalid(p.Child("nameservers"), c.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, utilvalidation.IsValidIP(p.Child("nameservers").Index(i), ns)...)
	}
	if len(c.Searches) > 32 {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, "must not have more than 32 search paths"))
	}
	if len(strings.Join(c.Searches, " ")) > 2048 {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, s := range c.Searches {
		// RelaxedDNSSearchValidation is on by default in 1.33: "." and underscores allowed
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range utilvalidation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(p.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateAffinity(a *corev1.Affinity, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			tp := np.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(tp, "must have at least one node selector term"))
			}
			for i, t := range req.NodeSelectorTerms {
				errs = append(errs, validateNodeSelectorTerm(t, false, tp.Index(i))...)
			}
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if t.Weight <= 0 || t.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(t.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity"))...)
	}
	return errs
}

func validateNodeSelectorTerm(t corev1.NodeSelectorTerm, allowInvalidValues bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, rq := range t.MatchExpressions {
		rp := p.Child("matchExpressions").Index(j)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(rq.Values) > 0 {
				errs = append(errs, field.Forbidden(rp.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(rq.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), rq.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(rq.Key, rp.Child("key"))...)
		if !allowInvalidValues {
			for k, v := range rq.Values {
				for _, msg := range utilvalidation.IsValidLabelValue(v) {
					errs = append(errs, field.Invalid(rp.Child("values").Index(k), v, msg))
				}
			}
		}
	}
	for j, rq := range t.MatchFields {
		rp := p.Child("matchFields").Index(j)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), rq.Operator, "not a valid selector operator"))
		}
		if rq.Key != "metadata.name" {
			errs = append(errs, field.Invalid(rp.Child("key"), rq.Key, "not a valid field selector key"))
		} else {
			for k, v := range rq.Values {
				for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
					errs = append(errs, field.Invalid(rp.Child("values").Index(k), v, msg))
				}
			}
		}
	}
	return errs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range required {
		errs = append(errs, validatePodAffinityTerm(t, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, t := range preferred {
		tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if t.Weight <= 0 || t.Weight > 100 {
			errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(t.PodAffinityTerm, tp.Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(t corev1.PodAffinityTerm, p *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, opts, p.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), ns, msg))
		}
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
}

func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		cp := p.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(cp.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(cp.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(c.TopologyKey, cp.Child("topologyKey"))...)
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(cp.Child("whenUnsatisfiable"), c.WhenUnsatisfiable,
				[]corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
	}
	return errs
}
