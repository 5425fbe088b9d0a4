package nodes

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodesOldestFirst is the names of the nodes a rebuild reads, in its order,
// page nodes per LIST.
func NodesOldestFirst(ctx context.Context, reader client.Reader, page int64) ([]string, error) {
	nodes, err := listNodesOldestFirst(ctx, reader, page)
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names, err
}
