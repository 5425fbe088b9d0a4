package reconcilers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetNodePage sets how many nodes one LIST returns when a manager rebuilds
// its state; call it before any manager starts.
func SetNodePage(n int64) { nodePage = n }

// NodesOldestFirst is the names of the nodes a rebuild reads, in its order.
func NodesOldestFirst(ctx context.Context, reader client.Reader) ([]string, error) {
	nodes, err := listNodesOldestFirst(ctx, reader)
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names, err
}
