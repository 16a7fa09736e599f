package encryption

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
)

// Upstream's messages (k8s.io/apiserver/pkg/apis/apiserver/validation), so that a file
// kube-apiserver refuses is refused here with the same words.
const (
	moreThanOneElementErr        = "more than one provider specified in a single element, should split into different list elements"
	noProviderErr                = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
	keyLenErrFmt                 = "secret is not of the expected length, got %d, expected one of %v"
	unsupportedSchemeErrFmt      = "unsupported scheme %q for KMS provider, only unix is supported"
	atLeastOneRequiredErrFmt     = "at least one %s is required"
	invalidURLErrFmt             = "invalid endpoint for kms provider, error: %v"
	mandatoryFieldErrFmt         = "%s is a mandatory field for a %s"
	base64EncodingErr            = "secrets must be base64 encoded"
	zeroOrNegativeErrFmt         = "%s should be a positive value"
	invalidKMSConfigNameErrFmt   = "invalid KMS provider name %s, must not contain ':'"
	duplicateKMSConfigNameErrFmt = "duplicate KMS provider name %s, names must be unique"
	eventsGroupErr               = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
	extensionsGroupErr           = "'extensions' group has been removed and cannot be used for encryption"
	starResourceErr              = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
	overlapErr                   = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
	nonRESTAPIResourceErr        = "resources which do not have REST API/s cannot be encrypted"
	resourceNameErr              = "resource name should not contain capital letters"
	resourceAcrossGroupErr       = "encrypting the same resource across groups is not supported"
	duplicateResourceErr         = "the same resource cannot be specified multiple times"
	// hacp's own: upstream turns KMS v1 off by default (feature gate KMSv1) and hacp has no
	// such gate; two keys of one provider with one name would be read in turn by a value
	// that names one of them.
	kmsV1Err         = "KMS v1 is deprecated and off by default in kube-apiserver; hacp supports KMS v2 only (apiVersion: v2)"
	duplicateKeyName = "duplicate key name %s, key names must be unique within a provider"
	cacheSizeV2Err   = "cachesize is not supported in v2"
)

var (
	aesKeySizes       = []int{16, 24, 32} // crypto/aes: AES-128, -192, -256
	secretboxKeySizes = []int{32}         // nacl/secretbox
	anyGroupResource  = schema.GroupResource{Group: "*", Resource: "*"}
)

// Validate checks c as kube-apiserver does, plus the two rules above; it also refuses a
// resource masked by an earlier entry's wildcard (upstream refuses that when it builds the
// transformers).
func Validate(c *apiserverv1.EncryptionConfiguration) field.ErrorList {
	root := field.NewPath("resources")
	if len(c.Resources) == 0 {
		return field.ErrorList{field.Required(root, fmt.Sprintf(atLeastOneRequiredErrFmt, root))}
	}
	var errs field.ErrorList
	kmsNames := sets.New[string]()
	seen := map[schema.GroupResource]bool{}
	for i, rc := range c.Resources {
		r := root.Index(i).Child("resources")
		p := root.Index(i).Child("providers")
		if len(rc.Resources) == 0 {
			errs = append(errs, field.Required(r, fmt.Sprintf(atLeastOneRequiredErrFmt, r)))
		}
		errs = append(errs, validateResourceOverlap(rc.Resources, r)...)
		errs = append(errs, validateResourceNames(rc.Resources, r)...)
		errs = append(errs, validateMasking(rc.Resources, r, seen)...)
		if len(rc.Providers) == 0 {
			errs = append(errs, field.Required(p, fmt.Sprintf(atLeastOneRequiredErrFmt, p)))
		}
		for j, provider := range rc.Providers {
			errs = append(errs, validateProvider(provider, p.Index(j), kmsNames)...)
		}
	}
	return errs
}

// validateProvider checks one provider entry.
func validateProvider(provider apiserverv1.ProviderConfiguration, path *field.Path, kmsNames sets.Set[string]) field.ErrorList {
	found := 0
	for _, set := range []bool{provider.KMS != nil, provider.AESGCM != nil, provider.AESCBC != nil, provider.Secretbox != nil, provider.Identity != nil} {
		if set {
			found++
		}
	}
	switch {
	case found == 0:
		return field.ErrorList{field.Invalid(path, "{}", noProviderErr)}
	case found > 1:
		return field.ErrorList{field.Invalid(path, "(several)", moreThanOneElementErr)}
	}
	switch {
	case provider.KMS != nil:
		errs := validateKMS(provider.KMS, path.Child("kms"), kmsNames)
		kmsNames.Insert(provider.KMS.Name)
		return errs
	case provider.AESGCM != nil:
		return validateKeys(provider.AESGCM.Keys, path.Child("aesgcm", "keys"), aesKeySizes)
	case provider.AESCBC != nil:
		return validateKeys(provider.AESCBC.Keys, path.Child("aescbc", "keys"), aesKeySizes)
	case provider.Secretbox != nil:
		return validateKeys(provider.Secretbox.Keys, path.Child("secretbox", "keys"), secretboxKeySizes)
	}
	return nil
}

// validateResourceOverlap refuses duplicates and wildcards that mask other entries of one list.
func validateResourceOverlap(resources []string, path *field.Path) field.ErrorList {
	if len(resources) < 2 {
		return nil
	}
	grs := make([]schema.GroupResource, 0, len(resources))
	for _, r := range resources {
		grs = append(grs, schema.ParseGroupResource(r))
	}
	var overlap, duplicate bool
	for i, a := range grs {
		for j, b := range grs {
			switch {
			case i == j:
			case a == b:
				duplicate = true
			case a == anyGroupResource:
				overlap = true
			case a.Group == b.Group && (a.Resource == "*" || b.Resource == "*"):
				overlap = true
			}
		}
	}
	var errs field.ErrorList
	if duplicate {
		errs = append(errs, field.Invalid(path, resources, duplicateResourceErr))
	}
	if overlap {
		errs = append(errs, field.Invalid(path, resources, overlapErr))
	}
	return errs
}

// validateResourceNames checks each resource name as upstream.
func validateResourceNames(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, res := range resources {
		at := path.Index(j)
		gr := schema.ParseGroupResource(res)
		switch {
		case strings.ToLower(res) != res:
			errs = append(errs, field.Invalid(at, res, resourceNameErr))
		case res == "*":
			errs = append(errs, field.Invalid(at, res, starResourceErr))
		case res == "apiserveripinfo" || res == "serviceipallocations" || res == "servicenodeportallocations":
			errs = append(errs, field.Invalid(at, res, nonRESTAPIResourceErr))
		case gr.Group == "events.k8s.io":
			errs = append(errs, field.Invalid(at, res, eventsGroupErr))
		case gr.Group == "extensions":
			errs = append(errs, field.Invalid(at, res, extensionsGroupErr))
		case gr.Group == "*" && gr.Resource != "*":
			errs = append(errs, field.Invalid(at, res, resourceAcrossGroupErr))
		}
	}
	return errs
}

// validateMasking refuses a resource that an earlier entry's "*.group" or "*.*" already
// covers (upstream: "resource %q is masked by earlier rule %q"); seen collects the entries.
func validateMasking(resources []string, path *field.Path, seen map[schema.GroupResource]bool) field.ErrorList {
	var errs field.ErrorList
	for j, res := range resources {
		gr := schema.ParseGroupResource(res)
		for _, mask := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, anyGroupResource} {
			if seen[mask] {
				errs = append(errs, field.Invalid(path.Index(j), res, fmt.Sprintf("resource %q is masked by earlier rule %q", grString(gr), grString(mask))))
				break
			}
		}
	}
	for _, res := range resources {
		seen[schema.ParseGroupResource(res)] = true
	}
	return errs
}

// grString writes a group and resource as the configuration file does ("secrets", "*.apps").
func grString(gr schema.GroupResource) string {
	if gr.Group == "" && gr.Resource == "*" {
		return "*."
	}
	return gr.String()
}

// validateKeys checks a provider's keys: at least one, each named (uniquely) and a base64
// secret of one of the sizes.
func validateKeys(keys []apiserverv1.Key, path *field.Path, sizes []int) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(path, fmt.Sprintf(atLeastOneRequiredErrFmt, "keys"))}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i, key := range keys {
		at := path.Index(i)
		if key.Name == "" {
			errs = append(errs, field.Required(at.Child("name"), fmt.Sprintf(mandatoryFieldErrFmt, "name", "key")))
		} else if names.Has(key.Name) {
			errs = append(errs, field.Invalid(at.Child("name"), key.Name, fmt.Sprintf(duplicateKeyName, key.Name)))
		}
		names.Insert(key.Name)
		if key.Secret == "" {
			errs = append(errs, field.Required(at.Child("secret"), fmt.Sprintf(mandatoryFieldErrFmt, "secret", "key")))
			continue
		}
		secret, err := base64.StdEncoding.DecodeString(key.Secret)
		if err != nil {
			errs = append(errs, field.Invalid(at.Child("secret"), "REDACTED", base64EncodingErr))
			continue
		}
		if !containsInt(sizes, len(secret)) {
			errs = append(errs, field.Invalid(at.Child("secret"), "REDACTED", fmt.Sprintf(keyLenErrFmt, len(secret), sizes)))
		}
	}
	return errs
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// validateKMS checks a KMS provider (after defaults): v2, a unique name without ':', a
// positive timeout and a unix:// endpoint.
func validateKMS(c *apiserverv1.KMSConfiguration, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(path.Child("name"), fmt.Sprintf(mandatoryFieldErrFmt, "name", "provider")))
	case strings.Contains(c.Name, ":"):
		errs = append(errs, field.Invalid(path.Child("name"), c.Name, fmt.Sprintf(invalidKMSConfigNameErrFmt, c.Name)))
	case names.Has(c.Name):
		errs = append(errs, field.Invalid(path.Child("name"), c.Name, fmt.Sprintf(duplicateKMSConfigNameErrFmt, c.Name)))
	}
	if c.APIVersion != "v2" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), c.APIVersion, kmsV1Err))
	} else if c.CacheSize != nil {
		errs = append(errs, field.Invalid(path.Child("cachesize"), *c.CacheSize, cacheSizeV2Err))
	}
	if c.Timeout == nil || c.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("timeout"), c.Timeout, fmt.Sprintf(zeroOrNegativeErrFmt, "timeout")))
	}
	if c.Endpoint == "" {
		errs = append(errs, field.Invalid(path.Child("endpoint"), "", fmt.Sprintf(mandatoryFieldErrFmt, "endpoint", "kms")))
	} else if u, err := url.Parse(c.Endpoint); err != nil {
		errs = append(errs, field.Invalid(path.Child("endpoint"), c.Endpoint, fmt.Sprintf(invalidURLErrFmt, err)))
	} else if u.Scheme != "unix" {
		errs = append(errs, field.Invalid(path.Child("endpoint"), c.Endpoint, fmt.Sprintf(unsupportedSchemeErrFmt, u.Scheme)))
	}
	return errs
}
