package testenv

import (
	"fmt"
	"time"
)

// PollInterval is how often Poll and Eventually call their function.
const PollInterval = 100 * time.Millisecond

// Poll calls f every PollInterval until it returns nil, and returns what and
// f's last error once EventuallyTimeout has passed. It is Eventually for
// code with no testing.TB to fail: TestMain, and the harness's own waits.
func Poll(what string, f func() error) error {
	deadline := time.Now().Add(EventuallyTimeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v: %w", what, EventuallyTimeout, err)
		}
		time.Sleep(PollInterval)
	}
}
