package ovnk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// AnnotationACLLogging is a namespace's network-policy ACL logging levels,
// {"allow": "<severity>", "deny": "<severity>"} (upstream's
// util.AclLoggingAnnotation).
const AnnotationACLLogging = "k8s.ovn.org/acl-logging"

// ACLLogging are the severities a namespace's network-policy ACLs log with
// ("": no logging): Allow on the policies' allow ACLs, Deny on the
// namespace's default-deny ACLs (libovsdbutil.ACLLoggingLevels).
type ACLLogging struct {
	Allow string `json:"allow,omitempty"`
	Deny  string `json:"deny,omitempty"`
}

// aclSeverities are the severities an ACL's severity column takes, and ""
// (no logging).
var aclSeverities = []string{"alert", "warning", "notice", "info", "debug", ""}

// DecodeACLLogging reads the AnnotationACLLogging of a namespace as
// upstream's aclLoggingUpdateNsInfo does: "" and "{}" log nothing; a value
// that is not JSON logs nothing; a level that is not a severity is
// disabled alone (the other stays). err says what was disabled.
func DecodeACLLogging(annotations map[string]string) (ACLLogging, error) {
	v := annotations[AnnotationACLLogging]
	var l ACLLogging
	if v == "" || v == "{}" {
		return l, nil
	}
	if err := json.Unmarshal([]byte(v), &l); err != nil {
		return ACLLogging{}, fmt.Errorf("annotation %s: %w: logging disabled", AnnotationACLLogging, err)
	}
	var errs []error
	if !slices.Contains(aclSeverities, l.Deny) {
		errs = append(errs, fmt.Errorf("annotation %s: deny %q is not a severity: deny logging disabled", AnnotationACLLogging, l.Deny))
		l.Deny = ""
	}
	if !slices.Contains(aclSeverities, l.Allow) {
		errs = append(errs, fmt.Errorf("annotation %s: allow %q is not a severity: allow logging disabled", AnnotationACLLogging, l.Allow))
		l.Allow = ""
	}
	return l, errors.Join(errs...)
}
