package authz

// The feature gates the bootstrap policy depends on, at their kube-apiserver v1.33 defaults.
const (
	gateClusterTrustBundle                               = false
	gateDRADeviceTaints                                  = false
	gateDynamicResourceAllocation                        = false
	gateKubeletFineGrainedAuthz                          = true
	gateKubeletServiceAccountTokenForCredentialProviders = false
	gateMultiCIDRServiceAllocator                        = true
	gateSELinuxChangePolicy                              = true
	gateStatefulSetAutoDeletePVC                         = true
	gateStorageVersionMigrator                           = false
	gateVolumeAttributesClass                            = false
	gateAPIServerIdentity                                = true
	gateStorageVersionAPI                                = false
	gateComponentFlagz                                   = false
	gateComponentStatusz                                 = false
)
