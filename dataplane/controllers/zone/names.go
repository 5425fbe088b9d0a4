package zone

import (
	"context"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/ovnk/nadtrust"
)

// Names is a controller's network-name function that remembers what it
// said of each NAD version (uid and resourceVersion), so a sweep parses
// only the NADs that changed since the previous one: the name functions
// read only the NAD. It keeps the NADs of the last full list (Live) and
// no others. The zero value is ready once Of has set its function.
type Names struct {
	once sync.Once
	of   func(*nadv1.NetworkAttachmentDefinition) (string, bool)

	mu   sync.Mutex
	seen map[types.NamespacedName]named
}

// named is what of said of one NAD version.
type named struct {
	uid     types.UID
	version string
	network string
	ok      bool
}

// Of sets n's function (the first call's) and returns n.
func (n *Names) Of(of func(*nadv1.NetworkAttachmentDefinition) (string, bool)) *Names {
	n.once.Do(func() { n.of = of })
	return n
}

// Name is the function's answer for nad. A NAD without a resourceVersion
// (built, not read) is asked every time.
func (n *Names) Name(nad *nadv1.NetworkAttachmentDefinition) (string, bool) {
	if nad.ResourceVersion == "" {
		return n.of(nad)
	}
	key := client.ObjectKeyFromObject(nad)
	n.mu.Lock()
	last, ok := n.seen[key]
	n.mu.Unlock()
	if ok && last.uid == nad.UID && last.version == nad.ResourceVersion {
		return last.network, last.ok
	}
	network, isNetwork := n.of(nad)
	n.mu.Lock()
	if n.seen == nil {
		n.seen = map[types.NamespacedName]named{}
	}
	n.seen[key] = named{uid: nad.UID, version: nad.ResourceVersion, network: network, ok: isNetwork}
	n.mu.Unlock()
	return network, isNetwork
}

// Live is LiveNetworks with n's function; what n remembers is then the
// NADs of this list only.
func (n *Names) Live(ctx context.Context, g *nadtrust.Guard) (map[string]bool, error) {
	live, nads, err := listLive(ctx, g, n.Name)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	kept := make(map[types.NamespacedName]named, len(nads))
	for _, v := range nads {
		key := client.ObjectKeyFromObject(v.NAD)
		if v, ok := n.seen[key]; ok {
			kept[key] = v
		}
	}
	n.seen = kept
	return live, nil
}
