package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/ovnk"
)

// IndexOVNPrefix is the field index (see IndexFields) of a UDN's or CUDN's
// OVN object prefix, ovnk.NetworkPrefix of its network name: OVN-Kubernetes
// replaces "-" and "/" with ".", so CUDNs col-x and col.x (or UDNs x-y and
// x.y of one namespace) would share every OVN object name.
const IndexOVNPrefix = "udnkit.webhooks.ovnprefix"

func udnPrefix(u *udnv1.UserDefinedNetwork) string {
	return ovnk.NetworkPrefix(ovnk.UDNNetworkName(u.Namespace, u.Name))
}

func cudnPrefix(c *udnv1.ClusterUserDefinedNetwork) string {
	return ovnk.NetworkPrefix(ovnk.CUDNNetworkName(c.Name))
}

func indexOVNPrefixes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &udnv1.UserDefinedNetwork{}, IndexOVNPrefix, func(o client.Object) []string {
		return []string{udnPrefix(o.(*udnv1.UserDefinedNetwork))}
	}); err != nil {
		return fmt.Errorf("indexing UserDefinedNetworks: %w", err)
	}
	if err := indexer.IndexField(ctx, &udnv1.ClusterUserDefinedNetwork{}, IndexOVNPrefix, func(o client.Object) []string {
		return []string{cudnPrefix(o.(*udnv1.ClusterUserDefinedNetwork))}
	}); err != nil {
		return fmt.Errorf("indexing ClusterUserDefinedNetworks: %w", err)
	}
	return nil
}

// ovnNameCollision refuses a new network whose OVN names another network
// already has, naming it (a UDN can only collide with a UDN of its own
// namespace, which its author may read; a CUDN with a CUDN). It reads the
// cache through IndexOVNPrefix and confirms a collision against the
// apiserver before refusing.
func ovnNameCollision(ctx context.Context, cache, api client.Reader, kind, namespace, name, prefix string) (field.ErrorList, error) {
	find := func(r client.Reader, indexed bool) (string, error) {
		var opts []client.ListOption
		if indexed {
			opts = append(opts, client.MatchingFields{IndexOVNPrefix: prefix})
		}
		if kind == udnv1.KindUserDefinedNetwork {
			var list udnv1.UserDefinedNetworkList
			if err := r.List(ctx, &list, append(opts, client.InNamespace(namespace))...); err != nil {
				return "", err
			}
			for i := range list.Items {
				if u := &list.Items[i]; u.Name != name && udnPrefix(u) == prefix {
					return "UserDefinedNetwork " + u.Namespace + "/" + u.Name, nil
				}
			}
			return "", nil
		}
		var list udnv1.ClusterUserDefinedNetworkList
		if err := r.List(ctx, &list, opts...); err != nil {
			return "", err
		}
		for i := range list.Items {
			if c := &list.Items[i]; c.Name != name && cudnPrefix(c) == prefix {
				return "ClusterUserDefinedNetwork " + c.Name, nil
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
	return field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"), fmt.Sprintf(
		"%s: its OVN objects would be named like those of %s (OVN-Kubernetes replaces '-' and '/' with '.', giving both the prefix %s); choose another name",
		name, other, prefix))}, nil
}
