package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// supportedArchs are the architectures a release is built for (Go's and Debian's names agree).
var supportedArchs = []string{"amd64", "arm64"}

type options struct {
	root, out    string
	archs        []string
	version      version
	allowMissing bool
	log          func(format string, args ...any)
}

// dist builds every package of packages.go for every architecture in o.out (emptied first):
// the .debs, a tarball per architecture and SHA256SUMS. It returns the artifacts' paths.
func dist(o options) ([]string, error) {
	if len(o.archs) == 0 {
		return nil, fmt.Errorf("no architecture given (want some of %v)", supportedArchs)
	}
	for _, a := range o.archs {
		if !slices.Contains(supportedArchs, a) {
			return nil, fmt.Errorf("architecture %q: want one of %v", a, supportedArchs)
		}
	}
	specs, err := presentPackages(o)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(o.out); err != nil {
		return nil, err
	}
	work := filepath.Join(o.out, ".work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	var artifacts []string
	for _, arch := range o.archs {
		bins := filepath.Join(work, arch, "bin")
		if err := buildPrograms(o, specs, arch, bins); err != nil {
			return nil, err
		}
		for _, p := range specs {
			deb, err := buildDeb(o, p, arch, bins, filepath.Join(work, arch, p.Name))
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", p.Name, arch, err)
			}
			artifacts = append(artifacts, deb)
		}
		tgz, err := buildTarball(o, specs, arch, bins)
		if err != nil {
			return nil, fmt.Errorf("tarball (%s): %w", arch, err)
		}
		artifacts = append(artifacts, tgz)
	}
	sums, err := writeChecksums(o.out, artifacts)
	if err != nil {
		return nil, err
	}
	return append(artifacts, sums), nil
}

// presentPackages is the package list less, with allowMissing, the ones whose program is not
// in this tree; without it, a missing program is an error.
func presentPackages(o options) ([]pkgSpec, error) {
	var specs []pkgSpec
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(o.root, p.Cmd, "main.go")); err != nil {
			if !o.allowMissing {
				return nil, fmt.Errorf("package %s: %s/main.go is missing: merge the branch that adds %s, or take %s out of internal/tools/dist/packages.go",
					p.Name, p.Cmd, p.Cmd, p.Name)
			}
			o.log("SKIP package %s: %s is not in this tree (-allow-missing)", p.Name, p.Cmd)
			continue
		}
		specs = append(specs, p)
	}
	return specs, nil
}

// buildPrograms cross-compiles every package's program for linux/arch with CGO off (static
// binaries that run on any Debian release), stripped, into dir.
func buildPrograms(o options, specs []pkgSpec, arch, dir string) error {
	for _, p := range specs {
		o.log("build %s for linux/%s", p.Cmd, arch)
		cmd := exec.Command("go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/hacp/hacp/internal/version.Version="+o.version.Raw,
			"-o", filepath.Join(dir, p.Binary), "./"+p.Cmd)
		cmd.Dir = o.root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./%s (linux/%s, CGO_ENABLED=0): %v\n%s", p.Cmd, arch, err, out)
		}
	}
	return nil
}

// writeChecksums writes SHA256SUMS (sha256sum's format) of the artifacts into dir.
func writeChecksums(dir string, artifacts []string) (string, error) {
	var b strings.Builder
	for _, a := range artifacts {
		f, err := os.Open(a)
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), filepath.Base(a))
	}
	path := filepath.Join(dir, "SHA256SUMS")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
