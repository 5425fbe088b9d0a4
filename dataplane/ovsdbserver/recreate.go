package ovsdbserver

import (
	"context"
	"errors"
	"os"
)

// Recreate kills the server (SIGKILL), replaces its database file with a
// new, empty one and serves it again on the same socket and remotes: the
// database a client reconnects to is another one, as after an operator
// recreated a lost or corrupted file.
func (s *Server) Recreate(ctx context.Context) error {
	s.Stop()
	if err := os.Remove(s.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Start creates the file as it creates every database.
	fresh, err := Start(ctx, s.dir, s.db)
	if err != nil {
		return err
	}
	s.cmd, s.done = fresh.cmd, fresh.done
	if s.tcp != "" || s.ssl != "" {
		return s.Restart(ctx)
	}
	return nil
}
