package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// authzServers starts two apiserver processes alike but for --authorization-mode: the
// default Node,RBAC and AlwaysAllow. Both are fresh processes from the same program, so
// their CPU time can be read apart and neither carries the state of the bench's other rows.
// binary is the program (-apiserver), else bin/apiserver, else one the bench builds.
func authzServers(dir string, fsync bool, binary string) (rbac, allow procServer) {
	binary = apiserverBinary(binary, dir)
	return startServer(dir, "authz-rbac", fsync, binary, "--authorization-mode", "Node,RBAC"),
		startServer(dir, "authz-allow", fsync, binary, "--authorization-mode", "AlwaysAllow")
}

// benchUser returns a client for user bench-user (group bench-group, not system:masters)
// with a certificate from the CA in pki, for the server rc points at.
func benchUser(rc *rest.Config, pki string) kubernetes.Interface {
	b := &certs.Bundle{CACert: filepath.Join(pki, certs.CACertFile), CAKey: filepath.Join(pki, certs.CAKeyFile)}
	certPEM, keyPEM, err := b.IssueClient("bench-user", []string{"bench-group"}, time.Hour)
	must(err)
	urc := rest.AnonymousClientConfig(rc)
	urc.CertData, urc.KeyData = certPEM, keyPEM
	return kubernetes.NewForConfigOrDie(urc)
}

// rbacRows compares, in the same run and alternating rounds, the same requests by the same
// non-admin user (bench-user, group bench-group) on two apiserver processes in the same
// state: one with the default --authorization-mode Node,RBAC, where a RoleBinding to the edit
// ClusterRole in its namespace allows them among 1000 RoleBindings of other users, and one
// with --authorization-mode=AlwaysAllow: the cost of RBAC over AlwaysAllow, as rates and as
// each server's own CPU time per request (which the machine's other load disturbs far less).
// The pair's "api" side is the RBAC server, its "etcd" side the AlwaysAllow one.
func rbacRows(ctx context.Context, dir string, fsync bool, binary string, n int) []cpuRow {
	rs, as := authzServers(dir, fsync, binary)
	defer rs.stop()
	defer as.stop()
	client := func(s procServer) (admin, user kubernetes.Interface) {
		rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
		must(err)
		rc.QPS, rc.Burst = 1e6, 1e6
		return kubernetes.NewForConfigOrDie(rc), benchUser(rc, s.pki)
	}
	radmin, user := client(rs)
	aadmin, allowUser := client(as)

	// The same objects on both servers, so that they differ in the authorizer only.
	for _, c := range []kubernetes.Interface{radmin, aadmin} {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac"}}, metav1.CreateOptions{})
		must(err)
		for i := range 1000 {
			_, err := c.RbacV1().RoleBindings("rbac").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%04d", i)},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: fmt.Sprintf("other-%04d", i)}}}, metav1.CreateOptions{})
			must(err)
		}
		_, err = c.RbacV1().RoleBindings("rbac").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "bench-group"}}}, metav1.CreateOptions{})
		must(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := user.CoreV1().ConfigMaps("rbac").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			break
		} else if time.Now().After(deadline) {
			must(fmt.Errorf("the bench user's binding did not take effect: %w", err))
		}
		time.Sleep(10 * time.Millisecond)
	}

	var rows []cpuRow
	measureRow := func(name string, conc, ops int, rbacOp, allowOp func(int) error) {
		rows = append(rows, measureCPU(rs.pid, as.pid, name, conc, ops, rbacOp, allowOp))
	}
	for _, conc := range []int{1, 32} {
		ops := n
		if conc > 1 {
			ops = n * 4
		}
		ucm, acm := user.CoreV1().ConfigMaps("rbac"), allowUser.CoreV1().ConfigMaps("rbac")
		create := func(cms func(string) error, who string) func(int) error {
			return func(i int) error { return cms(fmt.Sprintf("c%d-%s-%05d", conc, who, i)) }
		}
		mk := func(c interface {
			Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
		}) func(string) error {
			return func(name string) error {
				_, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
				return err
			}
		}
		measureRow("create", conc, ops, create(mk(ucm), "u"), create(mk(acm), "a"))
		measureRow("get", conc, ops, func(i int) error {
			_, err := ucm.Get(ctx, fmt.Sprintf("c%d-u-%05d", conc, i%ops), metav1.GetOptions{})
			return err
		}, func(i int) error {
			_, err := acm.Get(ctx, fmt.Sprintf("c%d-a-%05d", conc, i%ops), metav1.GetOptions{})
			return err
		})
		lops := ops / 4
		measureRow("list rv=0", conc, lops, func(int) error {
			_, err := ucm.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 100})
			return err
		}, func(int) error {
			_, err := acm.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 100})
			return err
		})
	}
	return rows
}

// printRBACRows prints rbacRows' table.
func printRBACRows(rows []cpuRow) {
	printCPURows("authorization: a non-admin user authorized by RBAC (a RoleBinding among 1001 in the namespace) vs the same user on an apiserver with --authorization-mode=AlwaysAllow, two fresh apiserver processes in the same state, same run (ratio: rbac/allow):",
		"rbac", "allow", rows)
}

// printSideBySide prints rows measured on two servers (the pair's api side is left, its etcd
// side right) under title.
func printSideBySide(title, left, right string, rows []pair) {
	fmt.Println("\n" + title)
	fmt.Printf("%-18s %4s | %10s %9s %9s | %10s %9s %9s | %7s\n", "op", "conc", left+" ops/s", "p50", "p99", right+" ops/s", "p50", "p99", "ratio")
	for _, p := range rows {
		fmt.Printf("%-18s %4d | %10.0f %9s %9s | %10.0f %9s %9s | %6.0f%%\n", p.api.name, p.api.conc,
			p.api.rate(), round(p.api.pct(0.5)), round(p.api.pct(0.99)),
			p.etcd.rate(), round(p.etcd.pct(0.5)), round(p.etcd.pct(0.99)), 100*p.ratio())
	}
}
