package addresses

import (
	"errors"
	"strings"

	"github.com/udnkit/udnkit/reconcilers/addresses/ipalloc"
)

// otherNamespaceOwner is how a pod's Events and its IPAMClaim's status name
// an address's holder in another namespace: a Primary Layer2 CUDN spans
// tenants, and a tenant may not read (nor learn of) another's pods.
const otherNamespaceOwner = "a workload in another namespace"

// forNamespace returns err as a tenant in namespace may read it: an
// address conflict with an owner ("kind/namespace/name") outside namespace
// no longer names it. Other errors are returned unchanged.
func forNamespace(err error, namespace string) error {
	var e *ipalloc.Error
	if !errors.As(err, &e) || e.Owner == "" {
		return err
	}
	parts := strings.SplitN(e.Owner, "/", 3)
	if len(parts) != 3 || parts[1] == namespace {
		return err // ours, or the network infrastructure
	}
	return &ipalloc.Error{Reason: e.Reason, Address: e.Address,
		Message: strings.ReplaceAll(err.Error(), e.Owner, otherNamespaceOwner)}
}
