package policy

import "flag"

// Options configure the policy controller.
type Options struct {
	// EgressIP is --enable-egress-ip: whether the cluster runs EgressIP
	// (OVN-Kubernetes' flag of the same name, default off as there), so
	// every network gets EgressIP's default rows.
	EgressIP bool
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.EgressIP, "enable-egress-ip", false,
		"the cluster runs EgressIP (OVN-Kubernetes' --enable-egress-ip): write EgressIP's no-reroute policies, address sets and reply QoS rules of each network")
}
