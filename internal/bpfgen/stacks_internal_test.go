package bpfgen

import "testing"

// TestParseStackToken reads the tokens the generator writes: each form,
// in StackMap or kept by value (the stored form bytes), an id + 1 of 0
// (no stack), callers(n)'s depth (0: every frame), and strings that are
// no token. The digits come least significant first.
func TestParseStackToken(t *testing.T) {
	for _, c := range []struct {
		s   string
		tok StackToken
		ok  bool
	}{
		{"\x1bkC@@@", StackToken{Form: KernelHex, ID: 2, Valid: true}, true},
		{"\x1bTAA@@", StackToken{Form: KernelText, Stored: true, ID: 64, Valid: true}, true},
		{"\x1buB@@@@@@@", StackToken{Form: UserHex, ID: 1, Valid: true, BuildIDs: ^uint32(0)}, true},
		{"\x1bVD@@@D@@@", StackToken{Form: UserText, Stored: true, ID: 3, Valid: true, BuildIDs: 3, BuildIDsValid: true}, true},
		{"\x1bv@@@@@@@@", StackToken{Form: UserHex, Stored: true, ID: ^uint32(0), BuildIDs: ^uint32(0)}, true},
		{"\x1bcC@@@D", StackToken{Form: KernelCallers, ID: 2, Valid: true, Depth: 4}, true},
		{"\x1bYB@@@B@@@@", StackToken{Form: UserCallers, Stored: true, ID: 1, Valid: true, BuildIDs: 1, BuildIDsValid: true}, true},
		{"\x1bcC@@@", StackToken{}, false}, // callers(n)'s has its depth
		{"\x1bvD@@@", StackToken{}, false}, // a user token is longer
		{"\x1bxD@@@", StackToken{}, false},
		{"\x1bkD@ @@", StackToken{}, false},
		{"kD@@@", StackToken{}, false},
	} {
		tok, ok := ParseStackToken(c.s)
		if tok != c.tok || ok != c.ok {
			t.Errorf("%q: %+v %v, want %+v %v", c.s, tok, ok, c.tok, c.ok)
		}
		if ok && tok.Len() != len(c.s) {
			t.Errorf("%q: length %d", c.s, tok.Len())
		}
	}
}
