package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// version is what a release is called: Raw as `git describe --always --dirty` says it (the
// programs' --version, as `make build` sets it) and Deb, the same mapped to a Debian version
// that sorts as the history does.
type version struct {
	Raw  string
	Deb  string
	Time time.Time // HEAD's commit time: the files' modification time, the changelog's date
}

// describeRE matches `git describe --tags --long --match 'v[0-9]*'`: the tag (with an optional
// pre-release part), the commits since it and the abbreviated hash.
var describeRE = regexp.MustCompile(`^v([0-9]+(?:\.[0-9]+)*)(?:-([0-9A-Za-z.]+))?-([0-9]+)-g([0-9a-f]+)$`)

// debVersion maps a long git description to a Debian version:
//
//	v1.2.3-0-gabc1234        1.2.3
//	v1.2.3-5-gabc1234        1.2.3+git5.gabc1234   (after 1.2.3, before 1.2.4)
//	v1.3.0-rc1-0-gabc1234    1.3.0~rc1             (before 1.3.0)
//	abc1234 (no tag yet)     0.0.0~git<commits>.gabc1234, ordered by the commit count
//
// and a dirty tree adds ".dirty". commits is the number of commits up to HEAD, used only
// without a tag.
func debVersion(describe string, commits int) (string, error) {
	dirty := strings.HasSuffix(describe, "-dirty")
	describe = strings.TrimSuffix(describe, "-dirty")
	var v string
	if m := describeRE.FindStringSubmatch(describe); m != nil {
		v = m[1]
		if m[2] != "" {
			v += "~" + m[2]
		}
		if m[3] != "0" {
			v += "+git" + m[3] + ".g" + m[4]
		}
	} else if regexp.MustCompile(`^[0-9a-f]{4,40}$`).MatchString(describe) {
		v = fmt.Sprintf("0.0.0~git%d.g%s", commits, describe)
	} else {
		return "", fmt.Errorf("git describe %q: want vX.Y.Z[-pre]-N-gHASH or a bare hash", describe)
	}
	if dirty {
		v += ".dirty"
	}
	return v, nil
}

// gitVersion asks git in root for the version of the tree.
func gitVersion(root string) (version, error) {
	raw, err := git(root, "describe", "--always", "--dirty")
	if err != nil {
		return version{}, err
	}
	long, err := git(root, "describe", "--tags", "--long", "--always", "--dirty", "--match", "v[0-9]*")
	if err != nil {
		return version{}, err
	}
	count, err := git(root, "rev-list", "--count", "HEAD")
	if err != nil {
		return version{}, err
	}
	n, err := strconv.Atoi(count)
	if err != nil {
		return version{}, fmt.Errorf("git rev-list --count: %q", count)
	}
	deb, err := debVersion(long, n)
	if err != nil {
		return version{}, err
	}
	ct, err := git(root, "log", "-1", "--format=%ct")
	if err != nil {
		return version{}, err
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return version{}, fmt.Errorf("git log --format=%%ct: %q", ct)
	}
	return version{Raw: raw, Deb: deb, Time: time.Unix(sec, 0).UTC()}, nil
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
