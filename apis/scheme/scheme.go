// Package scheme builds the runtime.Scheme every udnkit binary and test uses.
package scheme

import (
	ipamclaimsv1alpha1 "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
)

// New returns a scheme with the Kubernetes built-ins, apiextensions, the
// k8s.ovn.org/v1 API, NetworkAttachmentDefinitions and IPAMClaims.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, udnv1.AddToScheme,
		nadv1.AddToScheme, ipamclaimsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}
