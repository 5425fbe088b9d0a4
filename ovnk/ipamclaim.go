package ovnk

// The IPsAllocated condition OVN-Kubernetes writes on an IPAMClaim
// (OKEP-5233): True with reason SuccessfulAllocation once the claim's
// addresses are allocated, else False with the allocation's failure reason.
const (
	ConditionIPsAllocated      = "IPsAllocated"
	ReasonSuccessfulAllocation = "SuccessfulAllocation"
)
