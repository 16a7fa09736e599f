package authz

// The feature gates the bootstrap policy and the Node authorizer depend on, at their
// kube-apiserver v1.37 defaults (k8s.io/kubernetes/pkg/features, k8s.io/apiserver's and
// component-base's zpages gates, v1.37.2).
const (
	gateAPIServerIdentity                                = true
	gateCSIVolumeHealth                                  = false
	gateClusterTrustBundle                               = true // GA in 1.37
	gateComponentFlagz                                   = true // beta, on since 1.36
	gateComponentStatusz                                 = true // beta, on since 1.36
	gateCompositePodGroup                                = false
	gateDRADeviceTaintRules                              = true // GA in 1.37
	gateDRADeviceTaints                                  = true // GA in 1.37
	gateDRAExtendedResource                              = true // GA in 1.37
	gateDRAResourceClaimGranularStatusAuthorization      = true // beta, on since 1.36
	gateDRAResourcePoolStatus                            = false
	gateDRAWorkloadResourceClaims                        = false
	gateDynamicResourceAllocation                        = true // GA in 1.34
	gateEvictionRequestAPI                               = false
	gateGenericWorkload                                  = false
	gateKubeletFineGrainedAuthz                          = true
	gateKubeletServiceAccountTokenForCredentialProviders = true // beta, on since 1.34
	gateMultiCIDRServiceAllocator                        = true
	gatePodCertificateRequest                            = true // GA in 1.37
	gateSELinuxChangePolicy                              = true
	gateStorageVersionAPI                                = false
	gateStorageVersionMigrator                           = true // GA in 1.37
	gateVolumeAttributesClass                            = true // GA in 1.34
	gateWorkloadWithJob                                  = false
)
