package plugins

import (
	"reflect"
	"testing"
)

func TestForbiddenNodeLabels(t *testing.T) {
	for _, tc := range []struct {
		name     string
		now, old map[string]string
		want     []string
	}{
		{"own labels", map[string]string{"example.com/a": "1", "plain": "x"}, nil, nil},
		{"kubelet's set", map[string]string{"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z", "node.kubernetes.io/exclude-from-external-load-balancers": "", "kubelet.kubernetes.io/x": "y"}, nil, nil},
		{"restricted prefix", map[string]string{"node-restriction.kubernetes.io/tier": "gold", "a.node-restriction.kubernetes.io/b": "c"}, nil,
			[]string{"a.node-restriction.kubernetes.io/b", "node-restriction.kubernetes.io/tier"}},
		{"other kubernetes.io", map[string]string{"kubernetes.io/role": "master", "foo.k8s.io/x": "y"}, nil, []string{"foo.k8s.io/x", "kubernetes.io/role"}},
		{"unchanged is fine", map[string]string{"kubernetes.io/role": "master"}, map[string]string{"kubernetes.io/role": "master"}, nil},
		{"removal counts", nil, map[string]string{"node-restriction.kubernetes.io/tier": "gold"}, []string{"node-restriction.kubernetes.io/tier"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := forbiddenNodeLabels(tc.now, tc.old); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
