package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binaries the namespace tests start: the test binary itself doubles as vipd (with
// VIPD_TEST_MAIN=1 it runs main's run, race detector included when the test has it);
// lbproxy, apiserver (holding the Lease of the BGP leader mode) and gobgpd (GoBGP's daemon,
// a tool dependency of the module, pinned in go.mod) are built once by TestMain when
// running as root.
var lbproxyBin, gobgpdBin, apiserverBin string

func TestMain(m *testing.M) {
	if os.Getenv("VIPD_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "hb-bin-")
	if err != nil {
		panic(err)
	}
	if os.Geteuid() == 0 {
		lbproxyBin, gobgpdBin, apiserverBin = filepath.Join(dir, "lbproxy"), filepath.Join(dir, "gobgpd"), filepath.Join(dir, "apiserver")
		for pkg, out := range map[string]string{
			"github.com/hacp/hacp/cmd/lbproxy":    lbproxyBin,
			"github.com/hacp/hacp/cmd/apiserver":  apiserverBin,
			"github.com/osrg/gobgp/v3/cmd/gobgpd": gobgpdBin,
		} {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				os.RemoveAll(dir)
				panic("build " + pkg + ": " + err.Error())
			}
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
