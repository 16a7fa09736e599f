package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

const (
	maintainer = "hacp maintainers <hacp-maintainers@example.org>"
	homepage   = "https://github.com/hacp/hacp"
	// license is the one deploy/ansible/roles/*/meta/main.yml declare; the packages' copyright
	// file names it.
	license = "Apache-2.0"
	// packagesDir holds what the packages install besides the programs: units, default
	// configurations, maintainer scripts.
	packagesDir = "deploy/packages"
)

// daemonDepends are the dependencies of a package with a unit: the postinst creates the hacp
// user with systemd-sysusers and records the unit with deb-systemd-helper.
var daemonDepends = []string{"systemd | systemd-standalone-sysusers | systemd-sysusers", "init-system-helpers (>= 1.54~)"}

// buildDeb makes p's .deb for arch in o.out from the program in bins; work is its scratch
// directory (generated maintainer scripts, copyright, changelog).
func buildDeb(o options, p pkgSpec, arch, bins, work string) (string, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	contents, err := debContents(o, p, bins, work)
	if err != nil {
		return "", err
	}
	info := &nfpm.Info{
		Name:          p.Name,
		Arch:          arch,
		Platform:      "linux",
		Version:       o.version.Deb,
		VersionSchema: "none",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    maintainer,
		Homepage:      homepage,
		License:       license,
		Description:   p.Summary + "\n" + wrap(p.Description, 72),
		MTime:         o.version.Time,
		Overridables: nfpm.Overridables{
			Contents:   contents,
			Recommends: p.Recommends,
			Deb:        nfpm.Deb{Compression: "gzip"},
		},
	}
	if p.Unit != "" {
		info.Depends = daemonDepends
		scripts, err := renderScripts(o, p, work)
		if err != nil {
			return "", err
		}
		info.Scripts = scripts
	}
	path := filepath.Join(o.out, fmt.Sprintf("%s_%s_%s.deb", p.Name, o.version.Deb, arch))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := deb.Default.Package(nfpm.WithDefaults(info), f); err != nil {
		f.Close()
		return "", fmt.Errorf("nfpm: %w", err)
	}
	return path, f.Close()
}

// debContents lists the files of p's package: the program, its unit, default configuration
// (a conffile), sysusers.d entry, examples, copyright and changelog.
func debContents(o options, p pkgSpec, bins, work string) (files.Contents, error) {
	doc := "/usr/share/doc/" + p.Name
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode}}
	}
	c := files.Contents{file(filepath.Join(bins, p.Binary), "/usr/bin/"+p.Binary, 0o755)}
	if p.Unit != "" {
		c = append(c,
			file(filepath.Join(o.root, packagesDir, "systemd", p.Unit), "/lib/systemd/system/"+p.Unit, 0o644),
			file(filepath.Join(o.root, packagesDir, "sysusers.conf"), "/usr/lib/sysusers.d/"+p.Name+".conf", 0o644))
	}
	if p.Config != "" {
		conf := file(filepath.Join(o.root, packagesDir, "config", p.Config), "/etc/hacp/"+p.Config, 0o644)
		conf.Type = files.TypeConfig
		c = append(c, conf)
	}
	for _, ex := range p.Examples {
		c = append(c, file(filepath.Join(o.root, "configs", ex), doc+"/examples/"+ex, 0o644))
	}
	copyright := filepath.Join(work, "copyright")
	if err := os.WriteFile(copyright, []byte(copyrightText(o.version)), 0o644); err != nil {
		return nil, err
	}
	overrides := filepath.Join(work, "lintian-overrides")
	if err := render(filepath.Join(o.root, packagesDir, "lintian-overrides"), p, overrides, 0o644); err != nil {
		return nil, err
	}
	changelog := filepath.Join(work, "changelog.gz")
	if err := writeChangelog(changelog, p.Name, o.version); err != nil {
		return nil, err
	}
	c = append(c, file(copyright, doc+"/copyright", 0o644), file(changelog, doc+"/changelog.gz", 0o644),
		file(overrides, "/usr/share/lintian/overrides/"+p.Name, 0o644))
	for _, f := range c {
		if _, err := os.Stat(f.Source); err != nil {
			return nil, fmt.Errorf("%s for %s: %w", f.Source, f.Destination, err)
		}
	}
	return c, nil
}

// renderScripts writes p's maintainer scripts from the templates in deploy/packages/scripts.
func renderScripts(o options, p pkgSpec, work string) (nfpm.Scripts, error) {
	var s nfpm.Scripts
	for name, dst := range map[string]*string{"postinst": &s.PostInstall, "prerm": &s.PreRemove, "postrm": &s.PostRemove} {
		*dst = filepath.Join(work, name)
		if err := render(filepath.Join(o.root, packagesDir, "scripts", name), p, *dst, 0o755); err != nil {
			return s, err
		}
	}
	return s, nil
}

// render executes the template in file for p into dst.
func render(file string, p pkgSpec, dst string, mode os.FileMode) error {
	tmpl, err := template.ParseFiles(file)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, p); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return os.WriteFile(dst, b.Bytes(), mode)
}

func copyrightText(v version) string {
	return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: hacp
Source: ` + homepage + `

Files: *
Copyright: ` + v.Time.Format("2006") + ` the hacp authors
License: ` + license + `
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in the file /usr/share/common-licenses/Apache-2.0.
`
}

// writeChangelog writes a one-entry Debian changelog of the build, gzipped as Debian wants
// it (best compression, no name or time in the header).
func writeChangelog(path, pkg string, v version) error {
	text := fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * Built from git %s by make dist.\n\n -- %s  %s\n",
		pkg, v.Deb, v.Raw, maintainer, v.Time.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write([]byte(text)); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
