package policy

import "flag"

// Options configure the policy controller.
type Options struct {
	// EgressIP is --enable-egress-ip: whether the cluster runs EgressIP
	// (OVN-Kubernetes' flag of the same name, default off as there), so
	// every network gets EgressIP's default rows. It is the dataplane's
	// one home of the flag: Setup gives it to the Layer2 and Layer3
	// controllers too (their EgressIP).
	EgressIP bool
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.EgressIP, "enable-egress-ip", false,
		"the cluster runs EgressIP (OVN-Kubernetes' --enable-egress-ip): write EgressIP's rows of each network (no-reroute policies, address sets, reply QoS rules, Layer3 gateway routers' catch-all routes)")
}
