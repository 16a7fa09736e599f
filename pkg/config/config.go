// Package config loads a program's settings the same way for apiserver, vipd and lbproxy:
// defaults, then an optional YAML file (--config), then command-line flags, which win.
//
// Every flag is also a top-level key of the YAML file, with the same name. Unknown keys,
// wrong types and out-of-range values are reported as "FILE:LINE: key: what is wrong" (or
// "flag --name: ..." when the value came from the command line) before anything starts, and
// Exit maps such errors to exit code 2.
package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Program describes one program's configuration: how to make a default config and how to
// bind its flags. T is the program's config struct; its yaml tags must equal the flag names.
type Program[T any] struct {
	// Name is the program name used in usage and version output, e.g. "vipd".
	Name string
	// Summary is a paragraph printed at the top of --help.
	Summary string
	// Version is printed by --version.
	Version string
	// Default returns a config with every default filled in.
	Default func() *T
	// Flags binds the program's flags to the fields of c.
	Flags func(fs *flag.FlagSet, c *T)
	// Check, when set, runs after Validate with --check-config only: the checks of the
	// host that need no start (an interface exists, a file is readable, a certificate
	// matches its key). Like Validate it returns FieldErrors, tied to their flag or line.
	Check func(c *T) error
	// Output receives --help and --version text; os.Stdout when nil.
	Output io.Writer
}

// ErrHelp is returned by Parse after --help, --version or a successful --check-config was
// printed; Exit maps it to 0.
var ErrHelp = errors.New("config: help requested")

// Validator is implemented by config structs that check their values. Validate returns
// FieldErrors (several may be joined with errors.Join) so that each can be tied to the file
// line or flag that set the value.
type Validator interface {
	Validate() error
}

// FieldError is a bad value of one key. Key is the YAML path: "priority", or
// "instances.1.vips.0" for nested values.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// FieldErrorf returns a *FieldError for key.
func FieldErrorf(key, format string, args ...any) error {
	return &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Error is a configuration error tied to its origin: a file and line, or a flag.
type Error struct {
	File string // config file, empty when the value came from a flag or the default
	Line int    // 1-based line in File, 0 when unknown
	Flag string // flag name when the value came from the command line
	Key  string // the offending key, when known
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Flag != "":
		fmt.Fprintf(&b, "flag --%s: ", e.Flag)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	}
	if e.Key != "" && e.Flag == "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Exit prints err for the user and returns the process exit code: 0 for ErrHelp, 2 for
// configuration errors.
func Exit(name string, err error) int {
	if errors.Is(err, ErrHelp) {
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return 2
}

// Parse builds the configuration from defaults, the file named by --config and args.
func (p Program[T]) Parse(args []string) (*T, error) {
	out := p.Output
	if out == nil {
		out = os.Stdout
	}
	// First pass: find --config, --help and --version, and check the flags parse at all.
	first := p.Default()
	fs, meta := p.flagSet(first)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			p.usage(out, fs)
			return nil, ErrHelp
		}
		return nil, flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return nil, &Error{Msg: fmt.Sprintf("unexpected argument %q; see --help", fs.Arg(0))}
	}
	if meta.version {
		fmt.Fprintf(out, "%s %s\n", p.Name, p.Version)
		return nil, ErrHelp
	}

	cfg := p.Default()
	var doc *yaml.Node
	if meta.file != "" {
		var err error
		if doc, err = Load(meta.file, cfg); err != nil {
			return nil, err
		}
	}
	// Second pass: flags given on the command line override the file.
	fs, _ = p.flagSet(cfg)
	if err := fs.Parse(args); err != nil {
		return nil, flagError(fs, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if v, ok := any(cfg).(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, locate(err, meta.file, doc, set)
		}
	}
	if meta.check && p.Check != nil {
		if err := p.Check(cfg); err != nil {
			return nil, locate(err, meta.file, doc, set)
		}
	}
	if meta.check {
		what := "flags"
		if meta.file != "" {
			what = meta.file + " and flags"
		}
		fmt.Fprintf(out, "%s: configuration (%s) is valid\n", p.Name, what)
		return nil, ErrHelp
	}
	return cfg, nil
}

type metaFlags struct {
	file    string
	version bool
	check   bool
}

// flagSet binds the flags to c. It prints nothing: Parse prints the usage for --help and
// returns every other error as one *Error.
func (p Program[T]) flagSet(c *T) (*flag.FlagSet, *metaFlags) {
	fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	m := &metaFlags{}
	fs.StringVar(&m.file, "config", "", "YAML `file` with settings; its top-level keys are the flag names, and flags given on the command line override it")
	fs.BoolVar(&m.version, "version", false, "print the version and exit")
	fs.BoolVar(&m.check, "check-config", false, "load and validate the configuration (file and flags), report the result and exit: 0 when valid, 2 when not")
	p.Flags(fs, c)
	return fs, m
}

// Load decodes the YAML file at path into dst, a pointer to a struct with yaml tags, and
// returns the parsed document for locating keys. Unknown keys and wrong types are *Error
// values with the file's line.
func Load(path string, dst any) (*yaml.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read config: %v", unwrapPathError(err))}
	}
	return Decode(path, data, dst)
}

// Decode is Load for data already read; name is used in error messages.
func Decode(name string, data []byte, dst any) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(name, err, nil, dst)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &doc, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err, &doc, dst)
	}
	return &doc, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var (
	lineRe    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRe = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	// yamlDurationRe matches yaml.v3's error for a plain number given for a time.Duration.
	yamlDurationRe = regexp.MustCompile("^cannot unmarshal !!(?:int|float) `([0-9.]+)` into time.Duration$")
)

// yamlError turns a yaml.v3 error into one *Error per problem, joined.
func yamlError(name string, err error, doc *yaml.Node, dst any) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	for _, m := range msgs {
		e := &Error{File: name, Msg: m}
		if sm := lineRe.FindStringSubmatch(m); sm != nil {
			e.Line, _ = strconv.Atoi(sm[1])
			e.Msg = sm[2]
		}
		if dm := yamlDurationRe.FindStringSubmatch(e.Msg); dm != nil {
			e.Msg += fmt.Sprintf(" (a duration needs a unit, e.g. %ss)", dm[1])
		}
		if um := unknownRe.FindStringSubmatch(e.Msg); um != nil {
			e.Key = um[1]
			e.Msg = "unknown key"
			if s := suggest(dst, um[1]); s != "" {
				e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
		} else if doc != nil && e.Line > 0 {
			e.Key = keyAtLine(doc, e.Line)
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// locate ties validation errors to the flag or file line that set the bad value.
func locate(err error, file string, doc *yaml.Node, set map[string]bool) error {
	if err == nil {
		return nil
	}
	var errs []error
	for _, e := range flatten(err) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			errs = append(errs, &Error{File: file, Msg: e.Error()})
			continue
		}
		top, _, _ := strings.Cut(fe.Key, ".")
		switch {
		case set[top]:
			errs = append(errs, &Error{Flag: top, Key: fe.Key, Msg: fe.Msg})
		case doc != nil && lineOf(doc, fe.Key) > 0:
			errs = append(errs, &Error{File: file, Line: lineOf(doc, fe.Key), Key: fe.Key, Msg: fe.Msg})
		default:
			errs = append(errs, &Error{Key: fe.Key, Msg: fe.Msg})
		}
	}
	return errors.Join(errs...)
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// LineOf returns the line in doc (as Load and Decode return it) of the value at a dotted key
// path ("rules.2.level"), or of the deepest key on that path that exists; 0 when none does.
func LineOf(doc *yaml.Node, key string) int { return lineOf(doc, key) }

// lineOf returns the line of the value at a dotted key path ("instances.1.priority"), or of
// the deepest key on that path that exists.
func lineOf(doc *yaml.Node, key string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(key, ".") {
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
			if next == nil {
				return line
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// keyAtLine names the mapping key whose entry is on line, for type errors.
func keyAtLine(n *yaml.Node, line int) string {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Line == line || (v.Line == line && v.Kind == yaml.ScalarNode) {
				return k.Value
			}
		}
	}
	for _, c := range n.Content {
		if k := keyAtLine(c, line); k != "" {
			return k
		}
	}
	return ""
}

// suggest returns the known key closest to an unknown one (a likely misspelling), or "".
func suggest(dst any, unknown string) string {
	return closest(unknown, yamlKeys(reflect.TypeOf(dst), map[reflect.Type]bool{}))
}

// closest returns the candidate within edit distance 2 of word that is nearest to it (the
// first of equals), or "": the "did you mean" of unknown keys and unknown flags.
func closest(word string, candidates []string) string {
	best, bestDist := "", 3
	for _, k := range candidates {
		if d := editDistance(word, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// yamlKeys lists the yaml key names of a struct type and of the structs it contains.
func yamlKeys(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "-" {
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			keys = append(keys, name)
		}
		keys = append(keys, yamlKeys(f.Type, seen)...)
	}
	return keys
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
