// Package nadindex indexes NetworkAttachmentDefinitions by their
// controller's UID in a manager's cache. Each controller package registers
// the index under its own field name, so that each can be set up alone or
// beside the others in one manager.
package nadindex

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
)

// Register indexes NADs by their controller's UID under field.
func Register(ctx context.Context, indexer client.FieldIndexer, field string) error {
	return indexer.IndexField(ctx, &nadv1.NetworkAttachmentDefinition{}, field, controllerUID)
}

func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}
