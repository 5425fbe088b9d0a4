package ovsconn

import "github.com/go-logr/logr"

// dropSink passes libovsdb's log on (to a nil sink: nowhere) and tells the
// index when the cache dropped an event (its event buffer was full): then
// the index is rebuilt.
type dropSink struct {
	inner   logr.LogSink
	dropped func()
}

func newDropSink(inner logr.LogSink, dropped func()) dropSink {
	if cd, ok := inner.(logr.CallDepthLogSink); ok {
		inner = cd.WithCallDepth(1) // the caller's file and line, not dropSink's
	}
	return dropSink{inner, dropped}
}

// droppedEvent is what libovsdb's cache logs when it drops an event.
const droppedEvent = "dropping event because event buffer is full"

func (s dropSink) Init(info logr.RuntimeInfo) {
	if s.inner != nil {
		s.inner.Init(info)
	}
}

// Enabled is true at level 0 (the dropped event's) whatever the inner sink says.
func (s dropSink) Enabled(level int) bool { return level == 0 || s.enabled(level) }

func (s dropSink) enabled(level int) bool { return s.inner != nil && s.inner.Enabled(level) }

func (s dropSink) Info(level int, msg string, kv ...any) {
	if msg == droppedEvent {
		s.dropped()
	}
	if s.enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s dropSink) Error(err error, msg string, kv ...any) {
	if s.inner != nil {
		s.inner.Error(err, msg, kv...)
	}
}

func (s dropSink) WithValues(kv ...any) logr.LogSink {
	if s.inner != nil {
		s.inner = s.inner.WithValues(kv...)
	}
	return s
}

func (s dropSink) WithName(name string) logr.LogSink {
	if s.inner != nil {
		s.inner = s.inner.WithName(name)
	}
	return s
}
