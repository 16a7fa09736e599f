// Command dist builds hacp's versioned release artifacts (`make dist`): for each
// architecture a tarball with the programs, their systemd units, default configurations,
// README and license, and the Debian packages of packages.go, made with nFPM. The programs
// are cross-compiled with CGO off. Artifacts go to _output/dist, never into git; see
// docs/deploy.md#packages.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	archs := flag.String("arch", "amd64 arm64", "Debian/Go architectures to build, separated by spaces or commas")
	out := flag.String("out", "_output/dist", "output directory; emptied first")
	allowMissing := flag.Bool("allow-missing", false, "skip a listed package whose cmd/ directory is missing instead of failing (a branch without every program; CI never sets it)")
	flag.Parse()
	if err := runMain(*archs, *out, *allowMissing); err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
}

func runMain(archs, out string, allowMissing bool) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	v, err := gitVersion(root)
	if err != nil {
		return err
	}
	o := options{
		root: root, out: out, version: v, allowMissing: allowMissing,
		archs: strings.FieldsFunc(archs, func(r rune) bool { return r == ' ' || r == ',' }),
		log:   func(format string, args ...any) { fmt.Printf("dist: "+format+"\n", args...) },
	}
	if !filepath.IsAbs(o.out) {
		o.out = filepath.Join(root, o.out)
	}
	files, err := dist(o)
	if err != nil {
		return err
	}
	for _, f := range files {
		o.log("%s", f)
	}
	return nil
}

// repoRoot is the top directory of the git work tree dist runs in.
func repoRoot() (string, error) {
	return git(".", "rev-parse", "--show-toplevel")
}
