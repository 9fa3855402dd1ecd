package kernel

import (
	"maps"
	"strings"
	"testing"
)

// ParseExports finds the exported functions, the kernel's and a module's,
// by their export-table entries, and nothing else.
func TestParseExports(t *testing.T) {
	listing := "ffffffff81400000 T vfs_read\n" +
		"ffffffff82700000 r __ksymtab_vfs_read\n" +
		"ffffffff82700010 r __ksymtab_kernel_read\n" +
		"ffffffffc0000000 r __ksymtab_nfs_fs_type\t[nfs]\n" +
		"ffffffff82700020 R __start___ksymtab\n" +
		"ffffffff82700020 r __ksymtab_\n"
	got, err := ParseExports(strings.NewReader(listing))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"vfs_read": true, "kernel_read": true, "nfs_fs_type": true}
	if !maps.Equal(got, want) {
		t.Errorf("ParseExports = %v, want %v", got, want)
	}
}
