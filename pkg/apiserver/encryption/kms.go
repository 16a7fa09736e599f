package encryption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
	kmsservice "k8s.io/kms/pkg/service"
)

// kube-apiserver's KMS v2 timing: the plugin's status is asked every minute while it is
// healthy and every 10s while it is not; a data key (DEK seed) stays usable for writes for
// 3 minutes after the last good status, so a plugin that stays down stops writes, not reads.
const (
	kmsPositiveInterval = time.Minute
	kmsNegativeInterval = 10 * time.Second
	kmsWriteDEKMaxTTL   = 3 * time.Minute
	// apiServerID names this apiserver to the envelope transformer (its metrics only).
	apiServerID = "hacp"
)

// kmsProvider is one KMS v2 plugin: the gRPC client, the current data-encryption state
// (a DEK seed the plugin encrypted under its current key ID) and the loop that keeps it fresh.
type kmsProvider struct {
	name    string
	service kmsservice.Service
	log     *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	state   kmsv2.State
	version string // the plugin's first Status version, which must not change
	lastErr error  // of the last status check
}

// newKMSProvider dials the plugin (gRPC over its unix socket), primes the data key with one
// status check, and keeps checking in the background until close or ctx ends.
func newKMSProvider(ctx context.Context, c *apiserverv1.KMSConfiguration, log *slog.Logger) (*kmsProvider, error) {
	kctx, cancel := context.WithCancel(ctx)
	svc, err := kmsv2.NewGRPCService(kctx, c.Endpoint, c.Name, c.Timeout.Duration)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kms provider %q: %w", c.Name, err)
	}
	k := &kmsProvider{name: c.Name, service: svc, log: log.With("kms", c.Name), cancel: cancel, done: make(chan struct{}),
		state: kmsv2.State{KMSProviderName: c.Name}}
	primeCtx, primeCancel := context.WithTimeout(kctx, c.Timeout.Duration)
	err = k.check(primeCtx)
	primeCancel()
	if err != nil {
		k.log.Warn("KMS v2 plugin not ready; writes of its resources fail until it is", "endpoint", c.Endpoint, "err", err)
	}
	go k.run(kctx, c.Timeout.Duration)
	return k, nil
}

// prefixTransformer is the provider as an entry of its resources' provider list.
func (k *kmsProvider) prefixTransformer() value.PrefixTransformer {
	return value.PrefixTransformer{
		Transformer: kmsv2.NewEnvelopeTransformer(k.service, k.name, k.currentState, apiServerID),
		Prefix:      []byte(PrefixKMSv2 + k.name + ":"),
	}
}

// run checks the plugin's status every minute, every 10s after a failure, until ctx ends.
func (k *kmsProvider) run(ctx context.Context, timeout time.Duration) {
	defer close(k.done)
	for {
		wait := kmsPositiveInterval
		if k.healthy() != nil {
			wait = kmsNegativeInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		if err := k.check(cctx); err != nil && ctx.Err() == nil {
			k.log.Warn("KMS v2 plugin status check failed", "err", err)
		}
		cancel()
	}
}

// close stops the checks and the plugin's connection.
func (k *kmsProvider) close() {
	k.cancel()
	<-k.done
}

// healthy returns the last status check's error.
func (k *kmsProvider) healthy() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr
}

// check asks the plugin's status and, when its key ID changed (or there is no data key
// yet), has it encrypt a new DEK seed; else it extends the current seed's write lifetime.
func (k *kmsProvider) check(ctx context.Context) error {
	err := k.checkOnce(ctx)
	k.mu.Lock()
	k.lastErr = err
	k.mu.Unlock()
	return err
}

func (k *kmsProvider) checkOnce(ctx context.Context) error {
	st, err := k.service.Status(ctx)
	if err != nil {
		return fmt.Errorf("status of KMS provider %s: %w", k.name, err)
	}
	if st.Healthz != "ok" {
		return fmt.Errorf("KMS provider %s: got unexpected healthz status %q", k.name, st.Healthz)
	}
	if st.Version != kmsv2.KMSAPIVersionv2 && st.Version != kmsv2.KMSAPIVersionv2beta1 {
		return fmt.Errorf("KMS provider %s: expected KMSv2 API version %s, got %s", k.name, kmsv2.KMSAPIVersionv2, st.Version)
	}
	if _, err := kmsv2.ValidateKeyID(st.KeyID); err != nil {
		return fmt.Errorf("KMS provider %s: invalid key ID: %w", k.name, err)
	}
	k.mu.Lock()
	if k.version == "" {
		k.version = st.Version
	}
	same := k.version == st.Version
	cur := k.state
	k.mu.Unlock()
	if !same {
		return fmt.Errorf("KMS provider %s: API version changed from %s to %s", k.name, k.version, st.Version)
	}
	expires := time.Now().Add(kmsWriteDEKMaxTTL)
	if cur.Transformer != nil && cur.EncryptedObjectKeyID == st.KeyID {
		k.mu.Lock()
		k.state.ExpirationTimestamp = expires
		k.mu.Unlock()
		return nil
	}
	return k.rotate(ctx, st.KeyID, expires)
}

// rotate has the plugin encrypt a new DEK seed and makes it the one that writes.
func (k *kmsProvider) rotate(ctx context.Context, keyID string, expires time.Time) error {
	uid := string(uuid.NewUUID())
	tr, obj, cacheKey, err := kmsv2.GenerateTransformer(ctx, uid, k.service, true)
	if err != nil {
		return fmt.Errorf("KMS provider %s: new data key: %w", k.name, err)
	}
	if obj.KeyID != keyID {
		return fmt.Errorf("KMS provider %s: encrypt answered key ID %q, status %q", k.name, obj.KeyID, keyID)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.state = kmsv2.State{
		Transformer:                           tr,
		EncryptedObjectKeyID:                  obj.KeyID,
		EncryptedObjectEncryptedDEKSource:     obj.EncryptedDEKSource,
		EncryptedObjectAnnotations:            obj.Annotations,
		EncryptedObjectEncryptedDEKSourceType: kmstypes.EncryptedDEKSourceType_HKDF_SHA256_XNONCE_AES_GCM_SEED,
		UID:                                   uid,
		ExpirationTimestamp:                   expires,
		CacheKey:                              cacheKey,
		KMSProviderName:                       k.name,
	}
	k.log.Info("KMS v2 data key rotated", "keyIDHash", kmsv2.GetHashIfNotEmpty(obj.KeyID))
	return nil
}

// currentState is the envelope transformer's view of the data key: any state with a key
// reads; writes also need it unexpired (the transformer checks that).
func (k *kmsProvider) currentState() (kmsv2.State, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.state.Transformer == nil {
		if k.lastErr != nil {
			return kmsv2.State{}, fmt.Errorf("KMS provider %s has no data key yet: %w", k.name, k.lastErr)
		}
		return kmsv2.State{}, errors.New("KMS provider " + k.name + " has no data key yet")
	}
	return k.state, nil
}
