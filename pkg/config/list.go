package config

import (
	"flag"
	"strings"
)

// StringList binds a repeatable flag to *dst. The first use on the command line replaces
// what the file or the default put there; later uses append. A value may also hold several
// comma-separated items.
func StringList(fs *flag.FlagSet, dst *[]string, name, usage string) {
	fs.Var(&stringList{dst: dst}, name, usage)
}

type stringList struct {
	dst     *[]string
	touched bool
}

func (l *stringList) String() string {
	if l == nil || l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l *stringList) Set(v string) error {
	if !l.touched {
		*l.dst = nil
		l.touched = true
	}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l.dst = append(*l.dst, item)
		}
	}
	return nil
}
