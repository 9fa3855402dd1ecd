package sema

// SyscallLayoutVar is the local the second dispatch of a merged syscall.*
// entry tests (`if (__syscall_layout < 12) ... if (__syscall_layout ==
// 3) ...`): the code generator compiles its subtrees as subprograms
// (bpfgen's outline.go).
const SyscallLayoutVar = shapeVar
