package output

import "fmt"

// Failure is an error that ends a pass or the run, which stap reports as
// "ERROR: MSG": Error gives that line, Msg the message alone, which
// --json writes ("msg"). The prefix is added here, once, from the type:
// no code decides an error's severity from its text.
type Failure struct{ Err error }

// Failf returns a Failure whose message is formatted as fmt.Errorf does
// (%w wraps).
func Failf(format string, args ...any) error {
	return &Failure{fmt.Errorf(format, args...)}
}

func (f *Failure) Error() string { return "ERROR: " + f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Msg is the message without stap's "ERROR: ".
func (f *Failure) Msg() string { return f.Err.Error() }
