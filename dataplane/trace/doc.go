// Package trace proves with ovn-trace that the rows udnkit's dataplane
// controllers program carry packets where OKEP-5094, OKEP-5377, OKEP-5535 and
// the KubeVirt live-migration design say they go. Its tests build one OVN
// zone per node: real Northbound and Southbound databases with ovn-northd,
// the rows OVN-Kubernetes owns (gateway router, external switch, management
// port, pod ports) named and labelled as OVN-Kubernetes writes them, and
// udnkit's rows programmed by the same reconcilers the manager runs, fed from
// API objects through a fake client. Every check has a mutation that removes
// the row it depends on and must make it fail.
package trace
