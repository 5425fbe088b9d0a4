package layer3

import (
	"flag"

	"github.com/udnkit/udnkit/dataplane/topology"
)

// Options configure the Layer3 controller.
type Options struct {
	// Form is --layer3-subnet-policies, checked with
	// topology.ParseLayer3PolicyForm before Setup.
	Form topology.Layer3PolicyForm
}

// BindFlags binds Options to the manager's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar((*string)(&o.Form), "layer3-subnet-policies", string(topology.PolicyFormAddressSet),
		"rows of the OKEP-5377 Layer3 subnet-pair rule: address-set (one policy per family, O(subnets)) or pairs (upstream's one policy per subnet pair, O(subnets²))")
}
