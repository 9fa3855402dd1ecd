//go:build !amd64 && !arm64

package driver

// There is no holder for this architecture (holder_amd64.go,
// holder_arm64.go): -c is refused, saying so.
var holderCode []byte

const holderMachine = 0
