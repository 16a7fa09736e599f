package diffupstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// AllowEntry is one reviewed, intended difference: the checks it covers (id, or ids, each a
// check id or a pattern: * matches a run of characters other than /, ** any run), optionally
// the paths within the answers it covers (the same patterns; all when empty), the releases of
// kube-apiserver it applies to (all when empty), and why hacp differs there.
type AllowEntry struct {
	ID       string   `yaml:"id,omitempty"`
	IDs      []string `yaml:"ids,omitempty"`
	Paths    []string `yaml:"paths,omitempty"`
	Versions []string `yaml:"versions,omitempty"`
	Reason   string   `yaml:"reason"`
	ids      []*regexp.Regexp
	paths    []*regexp.Regexp
}

// name is how reports call the entry: its id, or its first id and how many more.
func (e *AllowEntry) name() string {
	if e.ID != "" {
		return e.ID
	}
	return fmt.Sprintf("%s (+%d)", e.IDs[0], len(e.IDs)-1)
}

// glob compiles a pattern: ** matches any run of characters, * one without /.
func glob(p string) *regexp.Regexp {
	q := regexp.QuoteMeta(p)
	q = strings.ReplaceAll(q, `\*\*`, "\x00")
	q = strings.ReplaceAll(q, `\*`, "[^/]*")
	q = strings.ReplaceAll(q, "\x00", ".*")
	return regexp.MustCompile("^" + q + "$")
}

// covers reports whether the entry allows the difference at path of check id.
func (e *AllowEntry) covers(id, path string) bool {
	if !slices.ContainsFunc(e.ids, func(re *regexp.Regexp) bool { return re.MatchString(id) }) {
		return false
	}
	if len(e.paths) == 0 {
		return true
	}
	for _, p := range e.paths {
		if p.MatchString(path) {
			return true
		}
	}
	return false
}

func (e *AllowEntry) appliesTo(version string) bool {
	return len(e.Versions) == 0 || slices.Contains(e.Versions, version)
}

// AllowList is test/upstream/diff-allow.yaml.
type AllowList struct{ Entries []AllowEntry }

// LoadAllowList reads an allow-list; unknown keys, an entry without id or reason, and a
// repeated id are errors. An empty path is an empty list.
func LoadAllowList(path string) (*AllowList, error) {
	a := &AllowList{}
	if path == "" {
		return a, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&a.Entries); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i := range a.Entries {
		e := &a.Entries[i]
		ids := e.IDs
		if e.ID != "" {
			ids = append([]string{e.ID}, ids...)
		}
		if len(ids) == 0 || strings.TrimSpace(e.Reason) == "" {
			return nil, fmt.Errorf("%s: entry %d: want an id (or ids) and a reason", path, i+1)
		}
		key := strings.Join(ids, ",") + " " + strings.Join(e.Paths, ",") + " " + strings.Join(e.Versions, ",")
		if seen[key] {
			return nil, fmt.Errorf("%s: entry %d: %s is listed twice", path, i+1, e.name())
		}
		seen[key] = true
		for _, id := range ids {
			e.ids = append(e.ids, glob(id))
		}
		for _, p := range e.Paths {
			e.paths = append(e.paths, glob(p))
		}
	}
	return a, nil
}

// explain returns the reasons of the entries for version that cover every difference of
// the check (its paths), and their indexes; nil if one difference is not covered.
func (a *AllowList) explain(id, version string, paths []string) (reasons []string, used []int) {
	for _, path := range paths {
		found := false
		for i := range a.Entries {
			e := &a.Entries[i]
			if e.appliesTo(version) && e.covers(id, path) {
				found = true
				if !slices.Contains(used, i) {
					used = append(used, i)
					reasons = append(reasons, e.Reason)
				}
				break
			}
		}
		if !found {
			return nil, nil
		}
	}
	return reasons, used
}
