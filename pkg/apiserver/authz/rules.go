package authz

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ruleAllows is upstream's rbac.RuleAllows: does one policy rule admit the attributes?
func ruleAllows(a *Attributes, r *rbacv1.PolicyRule) bool {
	if !verbMatches(r, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(r, a.Path)
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	return apiGroupMatches(r, a.APIGroup) && resourceMatches(r, combined, a.Subresource) && resourceNameMatches(r, a.Name)
}

func rulesAllow(a *Attributes, rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if ruleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

func verbMatches(r *rbacv1.PolicyRule, verb string) bool {
	for _, v := range r.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(r *rbacv1.PolicyRule, group string) bool {
	for _, g := range r.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(r *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, res := range r.Resources {
		if res == rbacv1.ResourceAll || res == combined {
			return true
		}
		// "*/status" matches the status subresource of any resource.
		if subresource != "" && len(res) == len(subresource)+2 && strings.HasPrefix(res, "*/") && strings.HasSuffix(res, subresource) {
			return true
		}
	}
	return false
}

func resourceNameMatches(r *rbacv1.PolicyRule, name string) bool {
	if len(r.ResourceNames) == 0 {
		return true
	}
	return hasString(r.ResourceNames, name)
}

func nonResourceURLMatches(r *rbacv1.PolicyRule, path string) bool {
	for _, u := range r.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}

// breakdown splits a rule into rules of one verb, group, resource (and name) or URL each,
// as upstream's BreakdownRule, so that coverage is checked piece by piece.
func breakdown(r rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}})
				}
				for _, n := range r.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, ResourceNames: []string{n}, Verbs: []string{v}})
				}
			}
		}
	}
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

// covers is upstream's validation.Covers: whether owner's rules include every permission in
// servant's, and the pieces they miss.
func covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, s := range servant {
		for _, piece := range breakdown(s) {
			covered := false
			for i := range owner {
				if ruleCovers(&owner[i], &piece) {
					covered = true
					break
				}
			}
			if !covered {
				missing = append(missing, piece)
			}
		}
	}
	return len(missing) == 0, missing
}

func hasAll(set, items []string) bool {
	for _, it := range items {
		if !hasString(set, it) {
			return false
		}
	}
	return true
}

func ruleCovers(owner, sub *rbacv1.PolicyRule) bool {
	verbs := hasString(owner.Verbs, rbacv1.VerbAll) || hasAll(owner.Verbs, sub.Verbs)
	groups := hasString(owner.APIGroups, rbacv1.APIGroupAll) || hasAll(owner.APIGroups, sub.APIGroups)
	resources := resourceCoversAll(owner.Resources, sub.Resources)
	urls := urlsCoverAll(owner.NonResourceURLs, sub.NonResourceURLs)
	names := len(owner.ResourceNames) == 0 || (len(sub.ResourceNames) > 0 && hasAll(owner.ResourceNames, sub.ResourceNames))
	return verbs && groups && resources && urls && names
}

func resourceCoversAll(set, items []string) bool {
	if hasString(set, rbacv1.ResourceAll) || hasAll(set, items) {
		return true
	}
	for _, p := range items {
		if hasString(set, p) {
			continue
		}
		_, sub, ok := strings.Cut(p, "/")
		if !ok || !hasString(set, "*/"+sub) {
			return false
		}
	}
	return true
}

func urlsCoverAll(set, items []string) bool {
	for _, it := range items {
		ok := false
		for _, u := range set {
			if u == it || (strings.HasSuffix(u, "*") && strings.HasPrefix(it, strings.TrimSuffix(u, "*"))) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// compactString is upstream's rbacv1helpers.CompactString, used in escalation messages.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	var args []any
	for _, f := range []struct {
		name string
		v    []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs}, {"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs}} {
		if len(f.v) > 0 {
			parts = append(parts, f.name+":%q")
			args = append(args, f.v)
		}
	}
	return fmt.Sprintf("{"+strings.Join(parts, ", ")+"}", args...)
}

// compactRules merges broken-down rules that differ only in their verb (upstream's
// CompactRules for simple resource rules), for shorter escalation messages.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	index := map[string]int{}
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.NonResourceURLs) != 0 {
			out = append(out, r)
			continue
		}
		key := r.APIGroups[0] + "\x00" + r.Resources[0] + "\x00" + strings.Join(r.ResourceNames, "\x00")
		if i, ok := index[key]; ok {
			if !hasString(out[i].Verbs, r.Verbs[0]) {
				out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			}
			continue
		}
		index[key] = len(out)
		r.Verbs = append([]string{}, r.Verbs...)
		out = append(out, r)
	}
	return out
}

// sortedStrings returns a sorted copy of s.
func sortedStrings(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}
