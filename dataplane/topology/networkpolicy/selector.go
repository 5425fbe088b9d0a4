package networkpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selectorString is upstream's shortLabelSelectorString
// (addresssetmanager/addressset_manager.go): the same string for
// equivalent selectors (labels and expressions sorted), "nil" for none.
func selectorString(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "nil"
	}
	s := "LS{"
	if len(sel.MatchLabels) > 0 {
		s += "ML:{"
		for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
			s += fmt.Sprintf("%v: %v,", k, sel.MatchLabels[k])
		}
		s += "},"
	}
	if len(sel.MatchExpressions) > 0 {
		exprs := make([]string, 0, len(sel.MatchExpressions))
		for _, e := range sel.MatchExpressions {
			values := slices.Sorted(slices.Values(e.Values))
			exprs = append(exprs, "LSR{Key:"+e.Key+",Operator:"+string(e.Operator)+",Values:"+fmt.Sprintf("%v", values)+",}")
		}
		slices.Sort(exprs)
		s += "ME:{" + strings.Join(exprs, ",") + "},"
	}
	return s + "}"
}

// podSelectorKey is upstream's getPodSelectorKey without a node selector
// (network policies have none): the static namespace or the namespace
// selector, the pod selector, and "_LNM" in legacy netpol mode (a peer
// with a namespace selector and no pod selector).
func podSelectorKey(podSel, nsSel *metav1.LabelSelector, namespace string, legacy bool) string {
	ns := namespace
	if nsSel != nil {
		ns = selectorString(nsSel)
	}
	key := ns + "_" + selectorString(podSel)
	if legacy {
		key += "_LNM"
	}
	return key
}
