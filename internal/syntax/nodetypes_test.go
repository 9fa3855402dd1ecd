package syntax

import (
	"go/ast"
	goparser "go/parser"
	gotoken "go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestNodeTypesAreEveryNode: NodeTypes lists every type of the package
// whose pointer is a Node, and nothing else.
func TestNodeTypesAreEveryNode(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var structs []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(gotoken.NewFileSet(), name, nil, goparser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.IsExported() {
				if _, ok := ts.Type.(*ast.StructType); ok {
					structs = append(structs, ts.Name.Name)
				}
			}
			return true
		})
	}
	var listed []string
	for _, x := range NodeTypes() {
		if _, ok := x.(Node); !ok {
			t.Errorf("%T is not a Node", x)
		}
		listed = append(listed, reflect.TypeOf(x).Elem().Name())
	}
	// The package's other structs, none of them a Node (Typed is embedded
	// in the expressions, its pointer a Node only so).
	others := []string{"Typed", "Var", "Func", "Config", "Error", "Names", "AliasName", "Source", "Pos"}
	for _, name := range structs {
		if slices.Contains(listed, name) == slices.Contains(others, name) {
			t.Errorf("%s: listed in NodeTypes %v, in the others %v", name, slices.Contains(listed, name), slices.Contains(others, name))
		}
	}
}
