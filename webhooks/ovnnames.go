package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// IndexOVNPrefix is the field index (see IndexFields) of a UDN's OVN object
// prefix, ovnk.NetworkPrefix of its network name: OVN-Kubernetes replaces
// "-" and "/" with ".", so UDNs x-y and x.y of one namespace would share
// every OVN object name. The UDN webhook looks a new Primary UDN's prefix up
// in it (udnkit-udn-peers checks every other new UDN, in the apiserver).
const IndexOVNPrefix = "udnkit.webhooks.ovnprefix"

func udnPrefix(u *udnv1.UserDefinedNetwork) string {
	return ovnk.NetworkPrefix(ovnk.UDNNetworkName(u.Namespace, u.Name))
}

func indexOVNPrefix(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &udnv1.UserDefinedNetwork{}, IndexOVNPrefix, func(o client.Object) []string {
		return []string{udnPrefix(o.(*udnv1.UserDefinedNetwork))}
	}); err != nil {
		return fmt.Errorf("indexing UserDefinedNetworks: %w", err)
	}
	return nil
}

// ovnNameCollision refuses a new UDN whose OVN names another UDN of its
// namespace already has, naming it, in udnkit-udn-peers' words. It reads the
// cache through IndexOVNPrefix and confirms a collision against the
// apiserver (api, when set) before refusing.
func ovnNameCollision(ctx context.Context, cache, api client.Reader, udn *udnv1.UserDefinedNetwork) (field.ErrorList, error) {
	prefix := udnPrefix(udn)
	find := func(r client.Reader, indexed bool) (string, error) {
		opts := []client.ListOption{client.InNamespace(udn.Namespace)}
		if indexed {
			opts = append(opts, client.MatchingFields{IndexOVNPrefix: prefix}, client.UnsafeDisableDeepCopy)
		}
		var list udnv1.UserDefinedNetworkList
		if err := r.List(ctx, &list, opts...); err != nil {
			return "", fmt.Errorf("listing UserDefinedNetworks: %w", err)
		}
		for i := range list.Items {
			if u := &list.Items[i]; u.Name != udn.Name && udnPrefix(u) == prefix {
				return u.Namespace + "/" + u.Name, nil
			}
		}
		return "", nil
	}
	other, err := find(cache, true)
	if err != nil || other == "" {
		return nil, err
	}
	if api != nil {
		if other, err = find(api, false); err != nil || other == "" {
			return nil, err
		}
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), udn.Name, fmt.Sprintf(
		"%s: its OVN objects would be named like those of UserDefinedNetwork %s (OVN-Kubernetes replaces '-' and '/' with '.', giving both the prefix %s); choose another name.",
		udn.Name, other, prefix))}, nil
}
