package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hacp/hacp/pkg/ctl"
)

func certsCheck(args []string, stdout, stderr io.Writer) int {
	o, code, done := parse(certsProgram("hacpctl certs check",
		`hacpctl certs check lists every PEM certificate in the files under --dir (subject, SANs,
issuer, notAfter, days left) and exits 1 when one expires within --warn.`,
		func(fs *flag.FlagSet, o *certsOptions) {
			fs.DurationVar(&o.Warn, "warn", o.Warn, "exit 1 when a certificate expires within this `duration`")
		}), args, stdout, stderr)
	if done {
		return code
	}
	now := time.Now()
	certs, err := ctl.ScanCerts(o.Dirs)
	if o.Output == "json" {
		_ = writeJSON(stdout, certs)
	} else if len(certs) > 0 {
		_ = ctl.WriteCerts(stdout, certs, now)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hacpctl certs check: %v\n", err)
		return 1
	}
	if len(certs) == 0 {
		fmt.Fprintf(stderr, "hacpctl certs check: no certificate files under %v\n", o.Dirs)
		return 1
	}
	if exp := ctl.Expiring(certs, now, o.Warn); len(exp) > 0 {
		c := exp[0]
		msg := fmt.Sprintf("%s (%s) expires %s, within %s", c.Path, c.Subject, c.NotAfter.UTC().Format(time.RFC3339), o.Warn)
		if n := len(exp) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more)", n)
		}
		fmt.Fprintf(stderr, "hacpctl certs check: %s\n", msg)
		return 1
	}
	return 0
}

func certsRenew(args []string, stdout, stderr io.Writer) int {
	o, code, done := parse(certsProgram("hacpctl certs renew",
		`hacpctl certs renew re-issues every leaf certificate under --dir whose CA's key is here too
(x.crt next to x.key): same subject, SANs, key usages and key, a new serial number, valid
for as long as before (or --valid-for). Each file is replaced atomically (temporary file and
rename); the programs pick the new files up when they reload them. Exit 1 when a leaf could
not be renewed (its CA key is elsewhere: renew it there, e.g. with rotate-certs.yml).`,
		func(fs *flag.FlagSet, o *certsOptions) {
			fs.DurationVar(&o.ValidFor, "valid-for", o.ValidFor, "validity of the new certificates (default: as long as the old ones)")
		}), args, stdout, stderr)
	if done {
		return code
	}
	rs, err := ctl.Renew(o.Dirs, time.Now(), o.ValidFor)
	if o.Output == "json" {
		_ = writeJSON(stdout, rs)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tSUBJECT\tRESULT")
		for _, r := range rs {
			res := "renewed, valid until " + r.NotAfter.UTC().Format(time.RFC3339)
			if r.Skipped != "" {
				res = "skipped: " + r.Skipped
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Path, r.Subject, res)
		}
		_ = tw.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "hacpctl certs renew: %v\n", err)
		return 1
	}
	for _, r := range rs {
		if r.Skipped != "" {
			fmt.Fprintf(stderr, "hacpctl certs renew: %s not renewed: %s\n", r.Path, r.Skipped)
			return 1
		}
	}
	return 0
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
