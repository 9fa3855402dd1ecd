package kernel

import "testing"

// TestResolveIn checks chains from a task_struct at the base address
// against the same chains from a pointer to it.
func TestResolveIn(t *testing.T) {
	b := kernelOrSkip(t)
	task, err := b.TypeByName("task_struct", KindStruct)
	if err != nil {
		t.Fatal(err)
	}
	ptr := b.pointerTo(t, task.ID)
	for _, chain := range [][]Step{
		{{Member: "tgid"}},
		{{Member: "real_parent"}, {Member: "tgid"}},
		{{Member: "cred"}, {Member: "euid"}, {Member: "val"}},
		{{Member: "comm"}},
	} {
		want, err := b.Resolve(ptr, chain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.ResolveIn("task_struct", chain)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Offsets) != len(want.Offsets) || got.Kind != want.Kind || got.Size != want.Size || got.Signed != want.Signed {
			t.Fatalf("%v: got %+v, want %+v", chain, got, want)
		}
		for i := range got.Offsets {
			if got.Offsets[i] != want.Offsets[i] {
				t.Errorf("%v: offsets %v, want %v", chain, got.Offsets, want.Offsets)
			}
		}
	}
	if _, err := b.ResolveIn("task_struct", []Step{{Member: "no_such_member"}}); err == nil {
		t.Error("a missing member resolved")
	}
	if _, err := b.ResolveIn("no_such_struct", nil); err == nil {
		t.Error("a missing struct resolved")
	}
}
