package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// LegacyTokenTrackingConfigMap is upstream's record (kube-system, key "since") of the day
// from which the apiservers label legacy tokens' Secrets with their last use:
// kube-controller-manager's legacy token cleaner trusts a missing label only for Secrets
// created before that day.
const (
	LegacyTokenTrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"
	legacyTokenTrackingKey       = "since"
)

// ensureLegacyTokenTracking creates the tracking ConfigMap with today (UTC) if it is absent,
// and puts today in it if its date does not parse, as upstream's legacytokentracking
// controller; a date that parses is never moved.
func (s *Server) ensureLegacyTokenTracking(ctx context.Context) error {
	today := time.Now().UTC().Format(time.DateOnly)
	cms := s.registry.Resource(schema.GroupResource{Resource: "configmaps"}).Store
	cur, err := cms.Get(ctx, metav1.NamespaceSystem, LegacyTokenTrackingConfigMap, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, metav1.NamespaceSystem, "", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: LegacyTokenTrackingConfigMap, Namespace: metav1.NamespaceSystem},
			Data:       map[string]string{legacyTokenTrackingKey: today},
		}, &metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // another apiserver was first
		}
		return err
	}
	if err != nil {
		return err
	}
	if cm, ok := cur.(*corev1.ConfigMap); ok {
		if _, perr := time.Parse(time.DateOnly, cm.Data[legacyTokenTrackingKey]); perr == nil {
			return nil
		}
	}
	_, _, err = cms.Update(ctx, metav1.NamespaceSystem, LegacyTokenTrackingConfigMap, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cm, ok := cur.(*corev1.ConfigMap)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, LegacyTokenTrackingConfigMap)
		}
		if _, err := time.Parse(time.DateOnly, cm.Data[legacyTokenTrackingKey]); err == nil {
			return cm, nil
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[legacyTokenTrackingKey] = today
		return cm, nil
	}, &metav1.UpdateOptions{})
	return err
}

// keepLegacyTokenTracking makes sure of the tracking ConfigMap at start and every minute
// after (upstream's controller recreates it when it is deleted). It runs after the server is
// ready: nothing waits for it.
func (s *Server) keepLegacyTokenTracking(ctx context.Context) {
	defer s.background.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := s.ensureLegacyTokenTracking(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("could not record legacy token tracking", "configmap", "kube-system/"+LegacyTokenTrackingConfigMap, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// markLegacyTokenUsed labels a legacy token's Secret with the day it was used, unless the
// Secret was replaced (another uid) meanwhile: upstream's merge patch with the uid as its
// precondition. It writes as the apiserver itself, not as the token's user.
func (s *Server) markLegacyTokenUsed(_ context.Context, sec *corev1.Secret, day string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	secrets := s.registry.Resource(schema.GroupResource{Resource: "secrets"}).Store
	_, _, err := secrets.Update(ctx, sec.Namespace, sec.Name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		c, ok := cur.(*corev1.Secret)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, sec.Name)
		}
		if c.UID != sec.UID {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, sec.Name,
				fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", sec.UID, c.UID))
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[authn.LegacyTokenLastUsedLabel] = day
		return c, nil
	}, &metav1.UpdateOptions{})
	return err
}
