package vip

import (
	"errors"
	"strconv"

	"github.com/hacp/hacp/pkg/config"
)

// CheckHost checks what --check-config can verify on this host without starting: the
// interfaces exist, the CA and kubeconfig files are readable, the check and notify commands
// can be run. Call it after Validate; the errors are config.FieldErrors.
func (c *Config) CheckHost() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// An instance's own key when it sets one, else the top-level default it inherits.
	key := func(i int, own bool, name string) string {
		if own {
			return "instances." + strconv.Itoa(i) + "." + name
		}
		return name
	}
	add(c.StatusTLS.Check())
	if c.Mode == "bgp" {
		add(config.CheckInterface("bgp-iface", c.BGPIface))
		for j, t := range c.TrackIfaces {
			add(config.CheckInterface("track-iface."+strconv.Itoa(j), t))
		}
		add(config.CheckReadable("kubeconfig", c.Kubeconfig))
	} else {
		list := c.Instances
		if len(list) == 0 {
			list = []Instance{c.Instance}
		}
		checked := map[string]bool{}
		for i, in := range list {
			own := len(c.Instances) > 0 && in.Iface != ""
			iface := in.Iface
			if !own {
				iface = c.Iface
			}
			if k := key(i, own, "iface"); !checked[k] {
				checked[k] = true
				add(config.CheckInterface(k, iface))
			}
			own = len(c.Instances) > 0 && len(in.TrackIfaces) > 0
			track := in.TrackIfaces
			if !own {
				track = c.TrackIfaces
			}
			for j, t := range track {
				if k := key(i, own, "track-iface") + "." + strconv.Itoa(j); !checked[k] {
					checked[k] = true
					add(config.CheckInterface(k, t))
				}
			}
		}
	}
	add(config.CheckCertificates("check-ca-file", c.CheckCAFile))
	add(config.CheckCommand("check-exec", c.CheckExec))
	add(config.CheckCommand("notify", c.Notify))
	return errors.Join(errs...)
}
