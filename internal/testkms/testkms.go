// Package testkms is a small KMS v2 plugin for tests: the gRPC KeyManagementService
// (k8s.io/kms/apis/v2) on a unix socket, encrypting with AES-256-GCM under named keys. The
// current key ID can be switched, as a real KMS rotates its key encryption key.
package testkms

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	kmsapi "k8s.io/kms/apis/v2"
	kmsservice "k8s.io/kms/pkg/service"
)

// Plugin is a running test KMS v2 plugin.
type Plugin struct {
	// Endpoint is the plugin's address as an EncryptionConfiguration names it (unix://...).
	Endpoint string

	mu      sync.Mutex
	current string
	keys    map[string]cipher.AEAD
	calls   map[string]int // by method: Status, Encrypt, Decrypt
}

// Start serves a plugin with key ID keyID on a socket in a new temporary directory until
// the test ends.
func Start(t testing.TB, keyID string) *Plugin {
	t.Helper()
	// Not t.TempDir(): a unix socket's path has at most 107 bytes, and test names are long.
	dir, err := os.MkdirTemp("", "testkms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "kms.sock")
	p := &Plugin{Endpoint: "unix://" + sock, keys: map[string]cipher.AEAD{}, calls: map[string]int{}}
	if err := p.Rotate(keyID); err != nil {
		t.Fatal(err)
	}
	// The socket listens before Start returns, so the apiserver's first status call finds it.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	kmsapi.RegisterKeyManagementServiceServer(gs, kmsservice.NewGRPCService(sock, 5*time.Second, p))
	served := make(chan error, 1)
	go func() { served <- gs.Serve(ln) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	return p
}

// Rotate makes keyID the key that encrypts from now on (a new key when it is new); the
// keys before it still decrypt.
func (p *Plugin) Rotate(keyID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.keys[keyID]; !ok {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return err
		}
		if p.keys[keyID], err = cipher.NewGCM(block); err != nil {
			return err
		}
	}
	p.current = keyID
	return nil
}

// Calls returns how often method ("Status", "Encrypt", "Decrypt") was called.
func (p *Plugin) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

// Status reports the plugin healthy, at API version v2, with its current key ID.
func (p *Plugin) Status(context.Context) (*kmsservice.StatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["Status"]++
	return &kmsservice.StatusResponse{Version: "v2", Healthz: "ok", KeyID: p.current}, nil
}

// Encrypt seals data (the apiserver's data key) under the current key: nonce, then ciphertext.
func (p *Plugin) Encrypt(_ context.Context, _ string, data []byte) (*kmsservice.EncryptResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["Encrypt"]++
	aead := p.keys[p.current]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &kmsservice.EncryptResponse{Ciphertext: aead.Seal(nonce, nonce, data, []byte(p.current)), KeyID: p.current}, nil
}

// Decrypt opens what Encrypt sealed under the request's key ID.
func (p *Plugin) Decrypt(_ context.Context, _ string, req *kmsservice.DecryptRequest) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["Decrypt"]++
	aead, ok := p.keys[req.KeyID]
	if !ok {
		return nil, fmt.Errorf("testkms: unknown key ID %q", req.KeyID)
	}
	n := aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("testkms: ciphertext too short")
	}
	return aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(req.KeyID))
}
