package ovnk

// OVNVersion is the OVN release udnkit is built for: the one OVN-Kubernetes'
// image ships. The dataplane's models are generated from its schemas (so its
// Northbound schema, 7.18.0, is the oldest the dataplane accepts), `make ovn`
// provisions it and the tests run against it.
const OVNVersion = "26.03.1"
