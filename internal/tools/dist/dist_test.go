package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
)

func TestDebVersion(t *testing.T) {
	tests := []struct {
		name, describe string
		commits        int
		want           string
	}{
		{"on a tag", "v1.2.3-0-gabc1234", 10, "1.2.3"},
		{"after a tag", "v1.2.3-5-gabc1234", 10, "1.2.3+git5.gabc1234"},
		{"pre-release tag", "v1.3.0-rc1-0-gabc1234", 10, "1.3.0~rc1"},
		{"after a pre-release tag", "v1.3.0-rc.2-4-gabc1234", 10, "1.3.0~rc.2+git4.gabc1234"},
		{"no tag yet", "555fdb1", 722, "0.0.0~git722.g555fdb1"},
		{"dirty", "v1.2.3-5-gabc1234-dirty", 10, "1.2.3+git5.gabc1234.dirty"},
		{"dirty without a tag", "555fdb1-dirty", 722, "0.0.0~git722.g555fdb1.dirty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := debVersion(tc.describe, tc.commits)
			if err != nil || got != tc.want {
				t.Fatalf("debVersion(%q) = %q, %v; want %q", tc.describe, got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "release-1", "v1.2.3", "vX-1-gabc"} {
		if got, err := debVersion(bad, 1); err == nil {
			t.Errorf("debVersion(%q) = %q, want an error", bad, got)
		}
	}
}

// TestDebVersionOrder: dpkg sorts the mapped versions as the history goes (a commit after
// a tag is newer than the tag and older than the next release; an untagged build is older
// than any release).
func TestDebVersionOrder(t *testing.T) {
	testenv.RequireCommand(t, "dpkg")
	order := []string{"0.0.0~git9.gaaaaaaa", "0.0.0~git10.gbbbbbbb", "1.2.3~rc1", "1.2.3", "1.2.3+git2.gccccccc", "1.2.3+git10.gaaaaaaa", "1.2.4"}
	for i := 1; i < len(order); i++ {
		if err := exec.Command("dpkg", "--compare-versions", order[i-1], "lt", order[i]).Run(); err != nil {
			t.Errorf("dpkg: %s is not older than %s", order[i-1], order[i])
		}
	}
}

var built struct {
	once      sync.Once
	dir       string
	artifacts []string
	skipped   []string
	err       error
}

// buildAMD64 builds the release for amd64 once for the tests of this package.
func buildAMD64(t *testing.T) (string, []string) {
	t.Helper()
	built.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.err = os.MkdirTemp("", "hacp-dist-test-")
		if built.err != nil {
			return
		}
		o := options{
			root: root, out: built.dir, archs: []string{"amd64"},
			version: version{Raw: "v9.8.7-test", Deb: "9.8.7~test", Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
			// Outside CI a branch may lack a listed program; in CI every one must build.
			allowMissing: !testenv.CI(),
			log: func(format string, args ...any) {
				if s := fmt.Sprintf(format, args...); strings.HasPrefix(s, "SKIP") {
					built.skipped = append(built.skipped, s)
				}
			},
		}
		built.artifacts, built.err = dist(o)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	for _, s := range built.skipped {
		t.Log(s)
	}
	return built.dir, built.artifacts
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// debFile is one entry of a package's data or control archive.
type debFile struct {
	mode    int64
	typ     byte
	owner   string
	content string
}

// readDeb reads a .deb back: the ar members' tar archives, as path -> entry for data.tar.gz
// and control.tar.gz.
func readDeb(t *testing.T, path string) (control, data map[string]debFile) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("!<arch>\n")) {
		t.Fatalf("%s: not an ar archive", path)
	}
	members := map[string][]byte{}
	var order []string
	for rest := b[8:]; len(rest) >= 60; {
		name := strings.TrimSuffix(strings.TrimSpace(string(rest[0:16])), "/")
		var size int
		if _, err := fmt.Sscan(strings.TrimSpace(string(rest[48:58])), &size); err != nil || 60+size > len(rest) {
			t.Fatalf("%s: bad ar header for %q", path, name)
		}
		members[name] = rest[60 : 60+size]
		order = append(order, name)
		rest = rest[60+size+size%2:]
	}
	if want := []string{"debian-binary", "control.tar.gz", "data.tar.gz"}; !slices.Equal(order, want) {
		t.Fatalf("%s: ar members %v, want %v", path, order, want)
	}
	if string(members["debian-binary"]) != "2.0\n" {
		t.Fatalf("%s: debian-binary %q", path, members["debian-binary"])
	}
	return readTarGz(t, members["control.tar.gz"]), readTarGz(t, members["data.tar.gz"])
}

func readTarGz(t *testing.T, b []byte) map[string]debFile {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]debFile{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := "/" + strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
		out[name] = debFile{mode: hdr.Mode & 0o7777, typ: hdr.Typeflag, owner: hdr.Uname + ":" + hdr.Gname, content: string(content)}
	}
}

// controlFields parses a control file's fields (continuation lines folded in).
func controlFields(s string) map[string]string {
	f := map[string]string{}
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") && last != "" {
			f[last] += "\n" + line
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			last = k
			f[k] = strings.TrimSpace(v)
		}
	}
	return f
}

func debPath(dir string, p pkgSpec) string {
	return filepath.Join(dir, p.Name+"_9.8.7~test_amd64.deb")
}
