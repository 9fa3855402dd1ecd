module github.com/bpftap/bpftap

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	golang.org/x/sys v0.49.0
	golang.org/x/tools v0.52.0
)
