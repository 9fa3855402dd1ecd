module github.com/bpftap/bpftap

go 1.26
