package networkpolicy

import "flag"

// Options configure the network-policy controller.
type Options struct {
	// MultiNetworkPolicy is --enable-multi-networkpolicy (OVN-Kubernetes'
	// flag of the same name, off by default as there): Secondary networks
	// follow the k8s.cni.cncf.io MultiNetworkPolicies whose policy-for
	// names one of their NADs. The MultiNetworkPolicy CRD must be installed.
	MultiNetworkPolicy bool
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.MultiNetworkPolicy, "enable-multi-networkpolicy", false,
		"the cluster uses MultiNetworkPolicies (OVN-Kubernetes' --enable-multi-networkpolicy; needs the k8s.cni.cncf.io MultiNetworkPolicy CRD): write each Secondary network's port groups, ACLs and address sets of the policies whose policy-for names it")
}
