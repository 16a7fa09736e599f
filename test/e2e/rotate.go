package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// rotationSecrets is how many Secrets the key rotation step creates and reads throughout.
const rotationSecrets = 3

// aescbcPrefix starts every value the aescbc provider wrote; the key's name and a colon follow.
const aescbcPrefix = "k8s:enc:aescbc:v1:"

// rotateEncryptionKey runs rotate-encryption-key.yml under a writer while a reader gets a
// few Secrets through the VIP, and checks that every read succeeded and that etcd holds
// them under the new key afterwards (under aescbc before: site.yml turned encryption on).
func (e *e2e) rotateEncryptionKey(ctx context.Context) error {
	secrets, err := e.createRotationSecrets()
	if err != nil {
		return err
	}
	oldKeys, err := e.encryptionKeyNames()
	if err != nil {
		return err
	}
	before, err := e.checkRawSecret(secrets[0], aescbcPrefix)
	if err != nil {
		return fmt.Errorf("before the rotation: %w", err)
	}
	var readErr error
	err = e.underWriter(ctx, "rotate-encryption-key.yml", func() error {
		var rerr error
		readErr, rerr = e.rotateUnderReader(ctx, secrets)
		return rerr
	})
	if err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	newKeys, err := e.encryptionKeyNames()
	if err != nil {
		return err
	}
	if len(newKeys) != 1 || slices.Contains(oldKeys, newKeys[0]) {
		return fmt.Errorf("keys after the rotation %v (before %v), want one new key", newKeys, oldKeys)
	}
	var after string
	for _, s := range secrets {
		if after, err = e.checkRawSecret(s, aescbcPrefix+newKeys[0]+":"); err != nil {
			return fmt.Errorf("after the rotation: %w", err)
		}
	}
	e.measured("raw etcd value of Secret e2e/%s on %s: %q before, %q after (all %d Secrets under the new key, none with its data in plaintext)",
		secrets[0].name, e.hosts[0].Name, before, after, len(secrets))
	return nil
}

// rotateUnderReader runs the playbook while a reader gets the Secrets through the VIP. It
// returns the reader's verdict (a key rotation keeps every Secret readable throughout) and
// the playbook's error apart, so that the writer's numbers are reported either way.
func (e *e2e) rotateUnderReader(ctx context.Context, secrets []rotationSecret) (readErr, playErr error) {
	cs, err := e.newClient(10 * time.Second)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	r := startReader(rctx, cs, "e2e", secrets)
	_, took, playErr := e.playbook("rotate-encryption-key.yml")
	cancel()
	st := r.result()
	if playErr != nil {
		return nil, playErr
	}
	e.measured("rotate-encryption-key.yml on 3 masters: %s", took.Round(100*time.Millisecond))
	e.measured("rotate-encryption-key.yml under a reader (one get of a Secret every 50 ms through the VIP, new connection each): %d reads, %d failed",
		st.OK+st.Failed, st.Failed)
	switch {
	case st.OK == 0:
		return errors.New("the reader never succeeded"), nil
	case st.Failed > 0:
		return fmt.Errorf("%d Secret reads failed during rotate-encryption-key.yml: a key rotation keeps every Secret readable throughout (first: %s)",
			st.Failed, st.FirstError), nil
	}
	return nil, nil
}

// rotationSecret is a Secret of namespace e2e with one data key, token.
type rotationSecret struct {
	name, token string
}

// createRotationSecrets creates the Secrets with kubectl through the VIP. Names and data
// carry the time: a step run again (-resume) makes new ones.
func (e *e2e) createRotationSecrets() ([]rotationSecret, error) {
	now := time.Now().Unix()
	var out []rotationSecret
	for i := range rotationSecrets {
		s := rotationSecret{
			name:  fmt.Sprintf("rotate-%d-%d", now, i),
			token: fmt.Sprintf("e2e-plaintext-%d-%d", now, i),
		}
		if _, err := e.kubectl("-n", "e2e", "create", "secret", "generic", s.name, "--from-literal=token="+s.token); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// encryptionKeyNames reads the names of the keys in the control machine's
// hacp_encryption_keys_file, in order (the first one writes).
func (e *e2e) encryptionKeyNames() ([]string, error) {
	path := filepath.Join(e.out, "pki", "encryption-keys.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(b, &keys); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	return names, nil
}

// checkRawSecret reads s's value in etcd on the first master with etcdctl and checks that
// it starts with want and holds no plaintext of s's data. It returns the value's
// encryption prefix.
func (e *e2e) checkRawSecret(s rotationSecret, want string) (string, error) {
	h := e.hosts[0]
	raw, err := e.ssh(h, etcdctl+" get --print-value-only /registry/secrets/e2e/"+s.name)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(raw, want) {
		return "", fmt.Errorf("%s: etcd value of Secret e2e/%s starts with %q, want %q", h.Name, s.name, encPrefix(raw), want)
	}
	if strings.Contains(raw, s.token) {
		return "", fmt.Errorf("%s: etcd value of Secret e2e/%s holds its data %q in plaintext", h.Name, s.name, s.token)
	}
	return encPrefix(raw), nil
}

// encPrefix returns the "k8s:enc:<provider>:v1:<key>:" prefix of an encrypted etcd value,
// or its first bytes when it has none.
func encPrefix(raw string) string {
	if strings.HasPrefix(raw, "k8s:enc:") {
		end := 0
		for range 5 {
			i := strings.IndexByte(raw[end:], ':')
			if i < 0 {
				break
			}
			end += i + 1
		}
		return raw[:end]
	}
	return raw[:min(len(raw), 16)]
}
