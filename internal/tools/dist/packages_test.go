package main

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/testenv"
)

// TestPackageContents reads every built .deb back: control fields, dependencies, the
// files with their modes and owners, conffiles, and what the maintainer scripts do.
func TestPackageContents(t *testing.T) {
	dir, _ := buildAMD64(t)
	for _, p := range packages {
		t.Run(p.Name, func(t *testing.T) {
			path := debPath(dir, p)
			if _, err := os.Stat(path); err != nil {
				if slices.ContainsFunc(built.skipped, func(s string) bool { return strings.Contains(s, " "+p.Name+":") }) {
					t.Skipf("%s is not in this tree (outside CI only)", p.Cmd)
				}
				t.Fatal(err)
			}
			control, data := readDeb(t, path)
			checkControl(t, p, control)
			checkData(t, p, data)
			if p.Unit != "" {
				checkScripts(t, p, control)
				checkUnit(t, p, data["/lib/systemd/system/"+p.Unit].content)
			}
		})
	}
}

func checkControl(t *testing.T, p pkgSpec, control map[string]debFile) {
	t.Helper()
	f := controlFields(control["/control"].content)
	for k, want := range map[string]string{"Package": p.Name, "Version": "9.8.7~test", "Architecture": "amd64", "Section": "admin", "Priority": "optional"} {
		if f[k] != want {
			t.Errorf("control %s: %q, want %q", k, f[k], want)
		}
	}
	if !strings.HasPrefix(f["Description"], p.Summary+"\n ") {
		t.Errorf("control Description: %q, want the summary and an extended description", f["Description"])
	}
	wantDepends := ""
	if p.Unit != "" {
		wantDepends = strings.Join(daemonDepends, ", ")
	}
	if f["Depends"] != wantDepends {
		t.Errorf("control Depends: %q, want %q", f["Depends"], wantDepends)
	}
	if got, want := f["Recommends"], strings.Join(p.Recommends, ", "); got != want {
		t.Errorf("control Recommends: %q, want %q", got, want)
	}
	var wantConf string
	if p.Config != "" {
		wantConf = "/etc/hacp/" + p.Config + "\n"
	}
	if got := control["/conffiles"].content; got != wantConf {
		t.Errorf("conffiles %q, want %q", got, wantConf)
	}
}

func checkData(t *testing.T, p pkgSpec, data map[string]debFile) {
	t.Helper()
	doc := "/usr/share/doc/" + p.Name
	want := map[string]int64{"/usr/bin/" + p.Binary: 0o755, doc + "/copyright": 0o644, doc + "/changelog.gz": 0o644,
		"/usr/share/lintian/overrides/" + p.Name: 0o644}
	if p.Unit != "" {
		want["/lib/systemd/system/"+p.Unit] = 0o644
		want["/usr/lib/sysusers.d/"+p.Name+".conf"] = 0o644
	}
	if p.Config != "" {
		want["/etc/hacp/"+p.Config] = 0o644
	}
	for _, ex := range p.Examples {
		want[doc+"/examples/"+ex] = 0o644
	}
	for path, f := range data {
		if f.typ == tar.TypeDir {
			if f.mode != 0o755 || f.owner != "root:root" {
				t.Errorf("directory %s: mode %o owner %s, want 755 root:root", path, f.mode, f.owner)
			}
			continue
		}
		m, ok := want[path]
		if !ok {
			t.Errorf("unexpected file %s", path)
			continue
		}
		if f.mode != m || f.owner != "root:root" || f.typ != tar.TypeReg {
			t.Errorf("%s: mode %o owner %s type %c, want a regular file %o root:root", path, f.mode, f.owner, f.typ, m)
		}
		delete(want, path)
	}
	for path := range want {
		t.Errorf("missing %s", path)
	}
	if bin := data["/usr/bin/"+p.Binary].content; !strings.HasPrefix(bin, "\x7fELF") {
		t.Errorf("/usr/bin/%s is not an ELF program", p.Binary)
	}
	if p.Unit != "" && !strings.Contains(data["/usr/lib/sysusers.d/"+p.Name+".conf"].content, "\nu hacp - ") {
		t.Errorf("sysusers.d entry does not declare the hacp user")
	}
}

// checkScripts: the postinst creates the user and never enables or starts the unit, the
// prerm stops it only on removal.
func checkScripts(t *testing.T, p pkgSpec, control map[string]debFile) {
	t.Helper()
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		f, ok := control["/"+s]
		if !ok || f.mode != 0o755 || !strings.HasPrefix(f.content, "#!/bin/sh\n") || strings.Contains(f.content, "{{") {
			t.Errorf("%s: missing, not 0755, not /bin/sh or not rendered (mode %o)", s, f.mode)
		}
	}
	postinst := control["/postinst"].content
	if !strings.Contains(postinst, "systemd-sysusers "+p.Name+".conf\n") {
		t.Errorf("postinst does not create the hacp user:\n%s", postinst)
	}
	for _, never := range []string{"enable", "deb-systemd-invoke start", "deb-systemd-invoke restart", "systemctl start", "systemctl restart"} {
		if strings.Contains(postinst, never+" ") {
			t.Errorf("postinst calls %q: the package must not start %s", never, p.Unit)
		}
	}
	if got := strings.Contains(postinst, "install -d -o hacp -g hacp -m 0700 /var/lib/hacp"); got != p.StateDir {
		t.Errorf("postinst creates /var/lib/hacp: %v, want %v", got, p.StateDir)
	}
	if prerm := control["/prerm"].content; !strings.Contains(prerm, `[ "$1" = "remove" ]`) || !strings.Contains(prerm, "deb-systemd-invoke stop "+p.Unit) {
		t.Errorf("prerm does not stop %s on removal only:\n%s", p.Unit, prerm)
	}
	if out, err := exec.Command("sh", "-n", "-c", postinst).CombinedOutput(); err != nil {
		t.Errorf("postinst: sh -n: %v: %s", err, out)
	}
}

// checkUnit: the unit runs the packaged program with the packaged configuration as hacp.
func checkUnit(t *testing.T, p pkgSpec, unit string) {
	t.Helper()
	for _, want := range []string{"\nExecStart=/usr/bin/" + p.Binary + " --config /etc/hacp/" + p.Config + "\n", "\nUser=hacp\n", "\nWantedBy=multi-user.target\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit %s lacks %q", p.Unit, strings.TrimSpace(want))
		}
	}
	if p.Name == "hacp-vipd" && !strings.Contains(unit, "\nAmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW\n") {
		t.Errorf("vipd's unit does not grant CAP_NET_ADMIN and CAP_NET_RAW")
	}
}

// TestTarball: the amd64 tarball holds every built program, unit and configuration, and
// SHA256SUMS lists every artifact.
func TestTarball(t *testing.T) {
	dir, artifacts := buildAMD64(t)
	tgz := filepath.Join(dir, "hacp-9.8.7~test-linux-amd64.tar.gz")
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]int64{}
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		got[strings.TrimPrefix(hdr.Name, "hacp-9.8.7~test-linux-amd64/")] = hdr.Mode
	}
	want := map[string]int64{"README.md": 0o644, "sysusers.d/hacp.conf": 0o644}
	for _, a := range artifacts {
		if strings.HasSuffix(a, ".deb") {
			name := strings.SplitN(filepath.Base(a), "_", 2)[0]
			i := slices.IndexFunc(packages, func(p pkgSpec) bool { return p.Name == name })
			want["bin/"+packages[i].Binary] = 0o755
			if packages[i].Unit != "" {
				want["systemd/"+packages[i].Unit] = 0o644
				want["config/"+packages[i].Config] = 0o644
			}
		}
	}
	for name, mode := range want {
		if got[name] != mode {
			t.Errorf("tarball %s: mode %o, want %o", name, got[name], mode)
		}
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range artifacts {
		if filepath.Base(a) != "SHA256SUMS" && !strings.Contains(string(sums), "  "+filepath.Base(a)+"\n") {
			t.Errorf("SHA256SUMS does not list %s", filepath.Base(a))
		}
	}
	cmd := exec.Command("sha256sum", "--check", "--quiet", "SHA256SUMS")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v: %s", err, out)
	}
}

// TestLintian runs Debian's lintian on every built .deb: no error and no warning (each
// package ships the overrides of deploy/packages/lintian-overrides, each with its reason).
func TestLintian(t *testing.T) {
	testenv.RequireCommand(t, "lintian")
	_, artifacts := buildAMD64(t)
	var debs []string
	for _, a := range artifacts {
		if strings.HasSuffix(a, ".deb") {
			debs = append(debs, a)
		}
	}
	args := append([]string{"--fail-on", "error,warning", "--tag-display-limit", "0"}, debs...)
	out, err := exec.Command("lintian", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("lintian: %v\n%s", err, out)
	}
	t.Logf("lintian on %d packages:\n%s", len(debs), out)
}
