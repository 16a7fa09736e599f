package main

import (
	"path/filepath"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdClient is a client of an apiserver's embedded etcd member at url, with the etcd client
// certificate that apiserver generated in pki (its cert dir): the member requires it.
func etcdClient(url, pki string) *clientv3.Client {
	tlsCfg, err := certs.LoadEtcdClientTLS(pki)
	must(err)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: zap.NewNop()})
	must(err)
	return c
}

// etcdTLSArgs are kube-apiserver's flags for the same certificate.
func etcdTLSArgs(pki string) []string {
	return []string{"--etcd-cafile=" + filepath.Join(pki, certs.EtcdCACertFile),
		"--etcd-certfile=" + filepath.Join(pki, certs.EtcdClientCertFile), "--etcd-keyfile=" + filepath.Join(pki, certs.EtcdClientKeyFile)}
}
