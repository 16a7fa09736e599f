package config

import (
	"io"
	"log/slog"
)

// NewLogger returns a key=value logger writing to w at level ("debug", "info", "warn" or
// "error"; anything else means info).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
