package config

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The flag package's parse errors, which flagError rewrites into one line that names the
// flag as the user wrote it (--name) and says what to do.
var (
	unknownFlagRe = regexp.MustCompile(`^flag provided but not defined: -(.+)$`)
	badValueRe    = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): (.*)$`)
	badBoolRe     = regexp.MustCompile(`^invalid boolean value "(.*)" for -(\S+): (.*)$`)
	needsArgRe    = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
)

// flagError turns an error of fs.Parse into one *Error: "flag --foo: unknown flag (did you
// mean --for?); see --help".
func flagError(fs *flag.FlagSet, err error) *Error {
	msg := err.Error()
	if m := unknownFlagRe.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		e := &Error{Flag: m[1], Msg: "unknown flag"}
		if s := closest(m[1], names); s != "" {
			e.Msg += " (did you mean --" + s + "?)"
		}
		e.Msg += "; see --help"
		return e
	}
	if m := needsArgRe.FindStringSubmatch(msg); m != nil {
		return &Error{Flag: m[1], Msg: "needs a value; see --help"}
	}
	if m := badBoolRe.FindStringSubmatch(msg); m != nil {
		return &Error{Flag: m[2], Msg: fmt.Sprintf("invalid value %q: want true or false (--%s alone means true)", m[1], m[2])}
	}
	if m := badValueRe.FindStringSubmatch(msg); m != nil {
		value, name, why := m[1], m[2], m[3]
		if isDuration(fs.Lookup(name)) {
			why = "want a duration such as 1.5s, 300ms or 2m"
			if _, err := strconv.ParseFloat(value, 64); err == nil {
				why = "a duration needs a unit, e.g. " + value + "s"
			}
		}
		if g, ok := fs.Lookup(name).Value.(flag.Getter); ok && why == "parse error" {
			why = fmt.Sprintf("not a valid %T", g.Get())
		}
		return &Error{Flag: name, Msg: fmt.Sprintf("invalid value %q: %s", value, why)}
	}
	return &Error{Msg: msg + "; see --help"}
}

// isDuration reports whether f holds a time.Duration.
func isDuration(f *flag.Flag) bool {
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}

// usage prints --help: the summary, then every flag as the README writes it (--name).
func (p Program[T]) usage(out io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(out, "Usage: %s [flags]\n\n", p.Name)
	if p.Summary != "" {
		fmt.Fprintf(out, "%s\n\n", strings.TrimSpace(p.Summary))
	}
	fmt.Fprintf(out, "Flags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		fmt.Fprintf(&b, "  --%s", f.Name)
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if !isZeroDefault(f) {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(out, b.String())
	})
}

// isZeroDefault reports whether f's default is its type's zero value, which help omits as
// flag.PrintDefaults does.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}
