package ovnk

import (
	"reflect"
	"strings"
	"testing"
)

// DecodeOpenPorts takes what upstream's UnmarshalUDNOpenPortsAnnotation
// takes and rejects what it rejects, with its messages
// (pkg/util/pod_annotation.go; the cases of pod_annotation_unit_test.go
// TestUnmarshalUDNOpenPortsAnnotation, plus JSON, the form users write).
func TestDecodeOpenPorts(t *testing.T) {
	port := func(i int) *int { return &i }
	for _, tc := range []struct {
		desc, input, errSubstr string
		want                   []OpenPort
	}{
		{desc: "protocol without port", input: `- protocol: tcp`, errSubstr: "entry 0: port is required for tcp protocol"},
		{desc: "port without protocol", input: `- port: 80`, errSubstr: "invalid protocol"},
		{desc: "invalid protocol", input: `- protocol: foo`, errSubstr: "invalid protocol foo"},
		{desc: "icmp with port", input: "- protocol: icmp\n  port: 80", errSubstr: "invalid port 80 for icmp protocol, should be empty"},
		{desc: "invalid port", input: "- protocol: tcp\n  port: 100000", errSubstr: "invalid port 100000"},
		{desc: "negative port", input: `[{"protocol":"udp","port":-1}]`, errSubstr: "invalid port -1"},
		{desc: "not a list", input: `{"protocol":"tcp"}`, errSubstr: "failed to unmarshal"},
		{desc: "port as a string", input: `[{"protocol":"tcp","port":"80"}]`, errSubstr: "failed to unmarshal"},
		{desc: "one bad entry rejects the list", input: `[{"protocol":"tcp","port":80},{"protocol":"icmp","port":1}]`,
			errSubstr: "entry 1: invalid port 1 for icmp protocol"},
		{desc: "valid icmp", input: `- protocol: icmp`, want: []OpenPort{{Protocol: "icmp"}}},
		{desc: "valid tcp", input: "- protocol: tcp\n  port: 80", want: []OpenPort{{Protocol: "tcp", Port: port(80)}}},
		{desc: "valid multiple protocols", input: "- protocol: tcp\n  port: 1\n- protocol: udp\n  port: 2\n- protocol: sctp\n  port: 3\n- protocol: icmp",
			want: []OpenPort{{"tcp", port(1)}, {"udp", port(2)}, {"sctp", port(3)}, {Protocol: "icmp"}}},
		{desc: "JSON keeps its order", input: `[{"protocol":"udp","port":53},{"protocol":"icmp"},{"protocol":"tcp","port":0}]`,
			want: []OpenPort{{"udp", port(53)}, {Protocol: "icmp"}, {"tcp", port(0)}}},
		{desc: "empty list", input: `[]`, want: []OpenPort{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := DecodeOpenPorts(map[string]string{AnnotationOpenDefaultPorts: tc.input})
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) || !strings.Contains(err.Error(), AnnotationOpenDefaultPorts) {
					t.Fatalf("err %v, want one naming %s and containing %q", err, AnnotationOpenDefaultPorts, tc.errSubstr)
				}
				if got != nil {
					t.Errorf("a rejected annotation opens %v", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if got, err := DecodeOpenPorts(map[string]string{"other": "x"}); got != nil || err != nil {
		t.Errorf("absent annotation: %v, %v", got, err)
	}
}
