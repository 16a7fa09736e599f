package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// buildTarball writes hacp-<version>-linux-<arch>.tar.gz: under one top directory the
// programs (bin/), their systemd units (systemd/), the packages' default configurations
// (config/), the sysusers.d entry, the commented examples of configs/ (examples/), README.md
// and LICENSE when the tree has one. Owners are root, times HEAD's commit time.
func buildTarball(o options, specs []pkgSpec, arch, bins string) (string, error) {
	top := fmt.Sprintf("hacp-%s-linux-%s", o.version.Deb, arch)
	type entry struct {
		src, dst string
		mode     int64
	}
	var entries []entry
	for _, p := range specs {
		entries = append(entries, entry{filepath.Join(bins, p.Binary), "bin/" + p.Binary, 0o755})
		if p.Unit != "" {
			entries = append(entries, entry{filepath.Join(o.root, packagesDir, "systemd", p.Unit), "systemd/" + p.Unit, 0o644})
		}
		if p.Config != "" {
			entries = append(entries, entry{filepath.Join(o.root, packagesDir, "config", p.Config), "config/" + p.Config, 0o644})
		}
		for _, ex := range p.Examples {
			entries = append(entries, entry{filepath.Join(o.root, "configs", ex), "examples/" + ex, 0o644})
		}
	}
	entries = append(entries,
		entry{filepath.Join(o.root, packagesDir, "sysusers.conf"), "sysusers.d/hacp.conf", 0o644},
		entry{filepath.Join(o.root, "README.md"), "README.md", 0o644})
	if _, err := os.Stat(filepath.Join(o.root, "LICENSE")); err == nil {
		entries = append(entries, entry{filepath.Join(o.root, "LICENSE"), "LICENSE", 0o644})
	} else {
		o.log("no LICENSE in the tree: the tarball has none (the packages' copyright file names %s)", license)
	}
	path := filepath.Join(o.out, top+".tar.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, e := range entries {
		for _, d := range []string{top, filepath.Join(top, filepath.Dir(e.dst))} {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: o.version.Time, Uname: "root", Gname: "root"}
			if err := tw.WriteHeader(hdr); err != nil {
				return "", err
			}
		}
		if err := addFile(tw, e.src, filepath.Join(top, e.dst), e.mode, o.version); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

func addFile(tw *tar.Writer, src, name string, mode int64, v version) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: fi.Size(), ModTime: v.Time, Uname: "root", Gname: "root"}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
