package audit

import (
	"errors"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/config"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LoadPolicy reads and checks an audit.k8s.io/v1 Policy file. Errors name the file, the
// line and the key.
func LoadPolicy(path string) (*Policy, error) {
	p := &Policy{}
	doc, err := config.Load(path, p)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, fe := range p.validate() {
		key := fieldKey(fe.Field)
		errs = append(errs, &config.Error{File: path, Line: config.LineOf(doc, key), Key: key, Msg: fe.ErrorBody()})
	}
	return p, errors.Join(errs...)
}

// fieldKey turns a field path ("rules[2].level") into the dotted key config.LineOf takes.
func fieldKey(path string) string {
	path = strings.ReplaceAll(path, "[", ".")
	return strings.ReplaceAll(path, "]", "")
}

// validate is upstream's ValidatePolicy, plus the checks its decoder makes (apiVersion,
// kind, at least one rule).
func (p *Policy) validate() field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{APIVersion}))
	}
	if p.Kind != "Policy" {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{"Policy"}))
	}
	if len(p.Rules) == 0 {
		errs = append(errs, field.Required(field.NewPath("rules"), "a policy needs at least one rule"))
	}
	errs = append(errs, validateStages(p.OmitStages, field.NewPath("omitStages"))...)
	for i, r := range p.Rules {
		fp := field.NewPath("rules").Index(i)
		switch r.Level {
		case LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse:
		case "":
			errs = append(errs, field.Required(fp.Child("level"), ""))
		default:
			errs = append(errs, field.NotSupported(fp.Child("level"), r.Level, []Level{LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse}))
		}
		for j, u := range r.NonResourceURLs {
			if u == "*" {
				continue
			}
			if !strings.HasPrefix(u, "/") {
				errs = append(errs, field.Invalid(fp.Child("nonResourceURLs").Index(j), u, "non-resource URL rules must begin with a '/' character"))
			}
			if u != "" && strings.ContainsRune(u[:len(u)-1], '*') {
				errs = append(errs, field.Invalid(fp.Child("nonResourceURLs").Index(j), u, "non-resource URL wildcards '*' must be the final character of the rule"))
			}
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, field.Invalid(fp.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		for j, gr := range r.Resources {
			gp := fp.Child("resources").Index(j)
			if gr.Group != "" && gr.Group != "*" {
				if msgs := validation.NameIsDNSSubdomain(gr.Group, false); len(msgs) != 0 {
					errs = append(errs, field.Invalid(gp.Child("group"), gr.Group, strings.Join(msgs, ",")))
				}
			}
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				errs = append(errs, field.Invalid(gp.Child("resourceNames"), gr.ResourceNames, "using resourceNames requires at least one resource"))
			}
		}
		errs = append(errs, validateStages(r.OmitStages, fp.Child("omitStages"))...)
	}
	return errs
}

var allStages = []Stage{StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic}

func validateStages(stages []Stage, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range stages {
		if !slices.Contains(allStages, s) {
			errs = append(errs, field.NotSupported(fp.Index(i), s, allStages))
		}
	}
	return errs
}

// RequestConfig is what the policy decides for one request.
type RequestConfig struct {
	Level             Level
	OmitStages        []Stage
	OmitManagedFields bool
}

// Omits reports whether events of stage s are left out.
func (c RequestConfig) Omits(s Stage) bool { return slices.Contains(c.OmitStages, s) }

// Evaluate returns the first matching rule's level, stages and managed-fields choice for a
// request of u (nil before authentication) described by info, as upstream's policy
// evaluator; then caps the level of requests that carry credentials (see MaxLevel).
func (p *Policy) Evaluate(u *request.User, info *request.Info) RequestConfig {
	c := RequestConfig{Level: LevelNone, OmitStages: p.OmitStages, OmitManagedFields: p.OmitManagedFields}
	for i := range p.Rules {
		r := &p.Rules[i]
		if ruleMatches(r, u, info) {
			c.Level = r.Level
			c.OmitStages = unionStages(p.OmitStages, r.OmitStages)
			if r.OmitManagedFields != nil {
				c.OmitManagedFields = *r.OmitManagedFields
			}
			break
		}
	}
	if max := MaxLevel(info); max.Less(c.Level) {
		c.Level = max
	}
	return c
}

// MaxLevel is the most a request may be recorded at whatever the policy says: requests
// whose bodies carry credentials are recorded at Metadata at most, so that Secret data,
// TokenRequest tokens (serviceaccounts/token) and TokenReview tokens never reach the log.
func MaxLevel(info *request.Info) Level {
	if info == nil || !info.IsResourceRequest {
		return LevelRequestResponse
	}
	switch {
	case info.APIGroup == "" && info.Resource == "secrets",
		info.APIGroup == "" && info.Resource == "serviceaccounts" && info.Subresource == "token",
		info.APIGroup == "authentication.k8s.io" && info.Resource == "tokenreviews":
		return LevelMetadata
	}
	return LevelRequestResponse
}

func unionStages(a, b []Stage) []Stage {
	if len(b) == 0 {
		return a
	}
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func ruleMatches(r *PolicyRule, u *request.User, info *request.Info) bool {
	if len(r.Users) > 0 && (u == nil || !slices.Contains(r.Users, u.Name)) {
		return false
	}
	if len(r.UserGroups) > 0 {
		if u == nil || !slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) }) {
			return false
		}
	}
	if len(r.Verbs) > 0 && (info == nil || !slices.Contains(r.Verbs, info.Verb)) {
		return false
	}
	if len(r.Namespaces) > 0 || len(r.Resources) > 0 {
		return ruleMatchesResource(r, info)
	}
	if len(r.NonResourceURLs) > 0 {
		if info == nil || info.IsResourceRequest {
			return false
		}
		for _, spec := range r.NonResourceURLs {
			if pathMatches(info.Path, spec) {
				return true
			}
		}
		return false
	}
	return true
}

func pathMatches(path, spec string) bool {
	if spec == "*" || spec == path {
		return true
	}
	return strings.HasSuffix(spec, "*") && strings.HasPrefix(path, strings.TrimRight(spec, "*"))
}

func ruleMatchesResource(r *PolicyRule, info *request.Info) bool {
	if info == nil || !info.IsResourceRequest {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, info.Namespace) {
		return false // cluster-scoped resources have the namespace ""
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := info.Resource
	if info.Subresource != "" {
		combined = info.Resource + "/" + info.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != info.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, info.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == combined || res == "*":
				return true
			case info.Subresource != "" && strings.HasPrefix(res, "*/") && info.Subresource == strings.TrimPrefix(res, "*/"):
				return true
			case strings.HasSuffix(res, "/*") && info.Resource == strings.TrimSuffix(res, "/*"):
				return true
			}
		}
	}
	return false
}
