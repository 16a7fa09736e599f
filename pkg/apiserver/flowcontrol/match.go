package flowcontrol

import (
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// matches reports whether a request by u asking for info is one of fs's: any of its rules
// matches, as upstream's matchesFlowSchema.
func matches(fs *flowcontrolv1.FlowSchema, u *request.User, info *request.Info) bool {
	for i := range fs.Spec.Rules {
		if matchesRule(&fs.Spec.Rules[i], u, info) {
			return true
		}
	}
	return false
}

func matchesRule(rule *flowcontrolv1.PolicyRulesWithSubjects, u *request.User, info *request.Info) bool {
	if !matchesASubject(rule.Subjects, u) {
		return false
	}
	if info.IsResourceRequest {
		for _, rr := range rule.ResourceRules {
			if matchesResourceRule(&rr, info) {
				return true
			}
		}
		return false
	}
	for _, nr := range rule.NonResourceRules {
		if contains(nr.Verbs, info.Verb, flowcontrolv1.VerbAll) && matchesURL(nr.NonResourceURLs, info.Path) {
			return true
		}
	}
	return false
}

func matchesASubject(subjects []flowcontrolv1.Subject, u *request.User) bool {
	for _, s := range subjects {
		if matchesSubject(s, u) {
			return true
		}
	}
	return false
}

// serviceAccountPrefix starts every service account's user name:
// system:serviceaccount:NAMESPACE:NAME.
const serviceAccountPrefix = "system:serviceaccount:"

func matchesSubject(s flowcontrolv1.Subject, u *request.User) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.Name)
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return false
		}
		if s.Group.Name == flowcontrolv1.NameAll {
			return true
		}
		for _, g := range u.Groups {
			if g == s.Group.Name {
				return true
			}
		}
		return false
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		rest, ok := strings.CutPrefix(u.Name, serviceAccountPrefix+s.ServiceAccount.Namespace+":")
		if !ok {
			return false
		}
		return s.ServiceAccount.Name == flowcontrolv1.NameAll || rest == s.ServiceAccount.Name
	}
	return false
}

func matchesResourceRule(rr *flowcontrolv1.ResourcePolicyRule, info *request.Info) bool {
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	if !contains(rr.Verbs, info.Verb, flowcontrolv1.VerbAll) ||
		!contains(rr.Resources, resource, flowcontrolv1.ResourceAll) ||
		!contains(rr.APIGroups, info.APIGroup, flowcontrolv1.APIGroupAll) {
		return false
	}
	if info.Namespace == "" {
		return rr.ClusterScope
	}
	return contains(rr.Namespaces, info.Namespace, flowcontrolv1.NamespaceEvery)
}

// matchesURL reports whether path is one of urls: equal, "*", or under a "prefix/*".
func matchesURL(urls []string, path string) bool {
	for _, u := range urls {
		if u == flowcontrolv1.NonResourceAll || u == path {
			return true
		}
		prefix := strings.TrimSuffix(u, "*")
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// contains reports whether list holds x, or is just the wildcard (validation keeps a
// wildcard alone in its list).
func contains(list []string, x, wildcard string) bool {
	if len(list) == 1 && list[0] == wildcard {
		return true
	}
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// distinguisher is the flow of a request within its FlowSchema: its user's name, its
// namespace, or nothing (one flow), by the schema's distinguisher method.
func distinguisher(fs *flowcontrolv1.FlowSchema, u *request.User, info *request.Info) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		return u.Name
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		return info.Namespace
	}
	return ""
}
