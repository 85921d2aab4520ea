package daemon

import "errors"

// Exit statuses shared by the daemons. ExitConfig is sysexits' EX_CONFIG: the configuration
// (file or environment) is invalid, so a restart cannot help. The systemd units list it in
// RestartPreventExitStatus=: the unit stops in the failed state, with the error in the journal,
// instead of being restarted every few seconds forever.
const (
	ExitFailure = 1
	ExitConfig  = 78
)

// configError marks an error in the configuration.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// ConfigError marks err (when not nil) as an error in the configuration: an operator has to fix
// it. Wrapping it further keeps the mark.
func ConfigError(err error) error {
	if err == nil {
		return nil
	}
	return configError{err}
}

// IsConfigError reports whether err is, or wraps, an error marked by ConfigError.
func IsConfigError(err error) bool {
	var c configError
	return errors.As(err, &c)
}

// ExitCode is a daemon's exit status for the error its run ended with: 0 for none, ExitConfig
// for a configuration error, ExitFailure otherwise.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case IsConfigError(err):
		return ExitConfig
	}
	return ExitFailure
}
