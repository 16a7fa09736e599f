package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
)

// The checks below are for Program.Check: what --check-config can verify on the host
// without starting. Each returns a *FieldError for key (the flag and YAML key that named
// the file), or nil; an empty path is not checked.

// CheckReadable checks that the file at path can be read.
func CheckReadable(key, path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return FieldErrorf(key, "cannot read %s: %v", path, unwrapPathError(err))
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
		return FieldErrorf(key, "cannot read %s: %v", path, unwrapPathError(err))
	}
	return nil
}

// CheckCertificates checks that path holds PEM certificates and that each parses.
func CheckCertificates(key, path string) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return FieldErrorf(key, "cannot read %s: %v", path, unwrapPathError(err))
	}
	n := 0
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		n++
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return FieldErrorf(key, "%s: certificate %d does not parse: %v", path, n, err)
		}
	}
	if n == 0 {
		return FieldErrorf(key, "%s holds no PEM certificate", path)
	}
	return nil
}

// CheckKeyPair checks that certPath and keyPath are readable, parse, and that the
// certificate is the key's; the error names certKey, or keyKey when only the key is bad.
func CheckKeyPair(certKey, certPath, keyKey, keyPath string) error {
	if certPath == "" || keyPath == "" {
		return nil
	}
	if err := CheckCertificates(certKey, certPath); err != nil {
		return err
	}
	if err := CheckReadable(keyKey, keyPath); err != nil {
		return err
	}
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		msg := strings.TrimPrefix(err.Error(), "tls: ")
		return FieldErrorf(certKey, "%s and %s (%s): %s", certPath, keyPath, keyKey, msg)
	}
	return nil
}

// CheckCommand checks that the program of command (split on spaces, as the daemons run
// it) is found and executable.
func CheckCommand(key, command string) error {
	f := strings.Fields(command)
	if len(f) == 0 {
		return nil
	}
	if _, err := exec.LookPath(f[0]); err != nil {
		return FieldErrorf(key, "cannot run %s: %v", f[0], unwrapPathError(err))
	}
	return nil
}

// CheckInterface checks that the network interface name exists on this host.
func CheckInterface(key, name string) error {
	if name == "" {
		return nil
	}
	if _, err := net.InterfaceByName(name); err != nil {
		return FieldErrorf(key, "interface %q does not exist on this host", name)
	}
	return nil
}
