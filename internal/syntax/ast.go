package syntax

// This file defines the abstract syntax tree of the SystemTap script language.
//
// Every node carries the position of its first token (for binary operators: the
// operator token, which is where stap points its diagnostics). Expressions also carry
// the type the elaborator inferred for them and, for identifiers and calls, the symbol
// they resolve to; the parser leaves those fields zero.

// Type is the type of a script value: SystemTap has longs, strings and statistics
// aggregates, and associative arrays of them.
type Type int

const (
	TypeUnknown Type = iota
	TypeLong
	TypeString
	TypeStats
)

func (t Type) String() string {
	switch t {
	case TypeLong:
		return "long"
	case TypeString:
		return "string"
	case TypeStats:
		return "stats"
	}
	return "unknown"
}

// Node is any node of the tree.
type Node interface {
	Position() Pos
}

// ---------------------------------------------------------------------------
// Files and declarations

// File is one parsed script or tapset file.
type File struct {
	Src   *Source
	Decls []Decl
	// Tapset is true for files of the embedded tapset library and -I directories.
	Tapset bool
}

// Decl is a top-level declaration.
type Decl interface {
	Node
	declNode()
}

// ProbeDecl is `probe POINT, POINT ... { body }`.
type ProbeDecl struct {
	Pos     Pos // of the `probe` keyword
	Points  []*ProbePoint
	Body    *Block
	Private bool
}

// AliasDecl is `probe NAME, NAME = POINT, POINT { body }` (prologue style) or
// `probe NAME += POINT { body }` (epilogue style, Epilogue true).
type AliasDecl struct {
	Pos      Pos
	Names    []*ProbePoint // the alias names being defined; components without args except wildcards
	Points   []*ProbePoint // what the alias expands to
	Body     *Block
	Epilogue bool
	Private  bool
}

// FuncDecl is `function NAME[:TYPE] (PARAM[:TYPE], ...) { body }` or with an
// embedded-C body `%{ ... %}` (then Body is nil and Embedded is set).
type FuncDecl struct {
	Pos      Pos // of the `function` keyword
	NamePos  Pos
	Name     string
	Result   Type // declared type, TypeUnknown if none
	Params   []*Param
	Body     *Block
	Embedded *EmbeddedCode
	Private  bool
	// Priority is the `: N` after the parameter list of tapset functions
	// (overload priority), 0 if none.
	Priority int64
}

// Param is one formal parameter of a function.
type Param struct {
	Pos  Pos
	Name string
	Type Type // declared type, TypeUnknown if none
	Var  *Var // set by the elaborator
}

// GlobalDecl declares one global variable. `global a, b[10] = ...` yields one
// GlobalDecl per name.
type GlobalDecl struct {
	Pos     Pos // of the name
	Name    string
	Size    int64 // declared array capacity, 0 if none; a declared size makes it an array
	IsArray bool  // declared with [N]
	Wrap    bool  // `%` suffix: the array wraps (evicts the oldest entries) when full
	Init    Expr  // literal initialiser (*NumberLit or *StringLit), nil if none
	Private bool
	Var     *Var // set by the elaborator
}

// EmbeddedCode is a `%{ ... %}` block: at top level, as a function body, or as an
// expression. It parses, and the elaborator refuses it: a BPF runtime has no guru mode.
type EmbeddedCode struct {
	Pos  Pos
	Code string
}

func (d *ProbeDecl) declNode()    {}
func (d *AliasDecl) declNode()    {}
func (d *FuncDecl) declNode()     {}
func (d *GlobalDecl) declNode()   {}
func (d *EmbeddedCode) declNode() {}

func (d *ProbeDecl) Position() Pos    { return d.Pos }
func (d *AliasDecl) Position() Pos    { return d.Pos }
func (d *FuncDecl) Position() Pos     { return d.Pos }
func (d *GlobalDecl) Position() Pos   { return d.Pos }
func (d *EmbeddedCode) Position() Pos { return d.Pos }
func (p *Param) Position() Pos        { return p.Pos }

// ProbePoint is a dotted probe point such as `kernel.function("sys_*").return?`.
type ProbePoint struct {
	Pos        Pos
	Components []*Component
	Optional   bool // `?` suffix
	Sufficient bool // `!` suffix (implies Optional)
	Cond       Expr // `if (expr)` guard, nil if none
}

// Component is one dotted part of a probe point: a name (which may contain `*`
// wildcards, or be `**`) and an optional literal argument.
type Component struct {
	Pos  Pos
	Name string
	Arg  Expr // *NumberLit or *StringLit, nil when the component has no parentheses
	// HasParens is true for `name()` with an empty argument list.
	HasParens bool
}

func (p *ProbePoint) Position() Pos { return p.Pos }
func (c *Component) Position() Pos  { return c.Pos }

// ---------------------------------------------------------------------------
// Statements

// Stmt is a statement.
type Stmt interface {
	Node
	stmtNode()
}

type (
	// Block is `{ stmt ... }`.
	Block struct {
		Pos   Pos
		Stmts []Stmt
	}
	// ExprStmt is an expression evaluated for its effects.
	ExprStmt struct {
		X Expr
	}
	// NullStmt is a lone `;`.
	NullStmt struct {
		Pos Pos
	}
	// IfStmt is `if (Cond) Then [else Else]`.
	IfStmt struct {
		Pos  Pos
		Cond Expr
		Then Stmt
		Else Stmt // nil if none
	}
	// WhileStmt is `while (Cond) Body`.
	WhileStmt struct {
		Pos  Pos
		Cond Expr
		Body Stmt
	}
	// ForStmt is `for (Init; Cond; Post) Body`; any of the three may be nil.
	ForStmt struct {
		Pos  Pos
		Init Expr
		Cond Expr
		Post Expr
		Body Stmt
	}
	// ForeachStmt is `foreach ([VALUE =] [K1, K2...] in ARRAY[SLICE] [+|-] [limit N]) Body`.
	ForeachStmt struct {
		Pos   Pos
		Value *Ident   // value binding (`v = [k] in a`), nil if none
		Keys  []*Ident // key variables, at least one
		Array Expr     // *Ident naming an array, or a *Hist
		// Slice restricts the iteration to keys matching these expressions; a *Star
		// matches anything. nil when no slice is given.
		Slice []Expr
		// SortCol is what the iteration is sorted on: 0 the value, 1..n the n-th key.
		// SortDir is +1 ascending, -1 descending, 0 unsorted.
		SortCol int
		SortDir int
		// SortAgg is the statistic a sort on the value uses (`@sum-`): "count",
		// "sum", "min", "max", "avg", "variance", or "" for the plain value.
		SortAgg string
		Limit   Expr // nil if none
		Body    Stmt
	}
	// BreakStmt, ContinueStmt and NextStmt are the jumps; NextStmt leaves the probe
	// (or the function).
	BreakStmt struct {
		Pos Pos
	}
	ContinueStmt struct {
		Pos Pos
	}
	NextStmt struct {
		Pos Pos
	}
	// ReturnStmt is `return [Value]`.
	ReturnStmt struct {
		Pos   Pos
		Value Expr // nil for a bare return
	}
	// DeleteStmt is `delete X` where X is an array, an indexed element (keys may be
	// *Star), or a scalar.
	DeleteStmt struct {
		Pos    Pos
		Target Expr
	}
	// TryStmt is `try { Body } catch [(Var)] { Catch }`.
	TryStmt struct {
		Pos      Pos
		Body     *Block
		CatchVar *Ident // nil if no variable is named
		Catch    *Block
	}
)

func (*Block) stmtNode()        {}
func (*ExprStmt) stmtNode()     {}
func (*NullStmt) stmtNode()     {}
func (*IfStmt) stmtNode()       {}
func (*WhileStmt) stmtNode()    {}
func (*ForStmt) stmtNode()      {}
func (*ForeachStmt) stmtNode()  {}
func (*BreakStmt) stmtNode()    {}
func (*ContinueStmt) stmtNode() {}
func (*NextStmt) stmtNode()     {}
func (*ReturnStmt) stmtNode()   {}
func (*DeleteStmt) stmtNode()   {}
func (*TryStmt) stmtNode()      {}
func (*EmbeddedCode) stmtNode() {}

func (s *Block) Position() Pos        { return s.Pos }
func (s *ExprStmt) Position() Pos     { return s.X.Position() }
func (s *NullStmt) Position() Pos     { return s.Pos }
func (s *IfStmt) Position() Pos       { return s.Pos }
func (s *WhileStmt) Position() Pos    { return s.Pos }
func (s *ForStmt) Position() Pos      { return s.Pos }
func (s *ForeachStmt) Position() Pos  { return s.Pos }
func (s *BreakStmt) Position() Pos    { return s.Pos }
func (s *ContinueStmt) Position() Pos { return s.Pos }
func (s *NextStmt) Position() Pos     { return s.Pos }
func (s *ReturnStmt) Position() Pos   { return s.Pos }
func (s *DeleteStmt) Position() Pos   { return s.Pos }
func (s *TryStmt) Position() Pos      { return s.Pos }

// ---------------------------------------------------------------------------
// Expressions

// Expr is an expression. Type returns the type the elaborator inferred.
type Expr interface {
	Node
	Type() Type
	SetType(Type)
}

// Typed is embedded in every expression: its position and inferred type.
type Typed struct {
	Pos Pos
	T   Type
}

func (t *Typed) Position() Pos   { return t.Pos }
func (t *Typed) Type() Type      { return t.T }
func (t *Typed) SetType(ty Type) { t.T = ty }

type (
	// NumberLit is an integer literal; Text is its spelling in the source.
	NumberLit struct {
		Typed
		Value int64
		Text  string
	}
	// StringLit is a string literal with escapes already decoded.
	StringLit struct {
		Typed
		Value string
		// Raw is stap's spelling of the value: C escapes (\n, \x41, \101, \\)
		// kept as written, `\"` and other escapes resolved. The -p1 printer
		// shows it; empty for synthesized literals (then Value is re-escaped).
		Raw string
	}
	// Ident is a variable reference: a local, a global (scalar or whole array), or a
	// function parameter. Var is set by the elaborator.
	Ident struct {
		Typed
		Name string
		Var  *Var
	}
	// Star is the `*` wildcard in an array slice (`delete a[*, 1]`, `[*, 1] in a`).
	Star struct {
		Typed
	}
	// Index is `Array[K1, K2, ...]`; Array is an *Ident or a *Hist (histogram bucket).
	Index struct {
		Typed
		Array Expr
		Keys  []Expr
	}
	// Unary is a prefix operator: `-`, `+`, `!`, `~`.
	Unary struct {
		Typed
		Op string
		X  Expr
	}
	// IncDec is `++x`, `--x`, `x++`, `x--`.
	IncDec struct {
		Typed
		Op     string // "++" or "--"
		Prefix bool
		X      Expr
	}
	// Binary is a binary operator: arithmetic, bitwise, shifts, comparisons,
	// `&&`, `||`, string concatenation `.`, and regular-expression matches `=~`/`!~`.
	Binary struct {
		Typed // Pos is the operator's
		Op    string
		X, Y  Expr
	}
	// Assign is `LHS op RHS` for `=`, the compound assignments (`+=`, `.=`, `<<=` ...)
	// and the statistics accumulation `<<<`.
	Assign struct {
		Typed // Pos is the operator's
		Op    string
		LHS   Expr
		RHS   Expr
	}
	// Ternary is `Cond ? Then : Else`.
	Ternary struct {
		Typed
		Cond, Then, Else Expr
	}
	// In is `K in A` or `[K1, K2] in A`; keys may be *Star.
	In struct {
		Typed
		Keys  []Expr
		Array Expr // *Ident
	}
	// Call is a call of a script function, a tapset function or a builtin. Func is
	// set by the elaborator.
	Call struct {
		Typed
		Name string
		Args []Expr
		Func *Func
	}
	// PrintCall is one of the print family: print, println, printd, printdln, printf,
	// and their s* variants that return a string. Format holds printf's format,
	// Delim printd's delimiter; both are string literals in the source.
	PrintCall struct {
		Typed
		Name   string
		Format *StringLit // printf/sprintf only
		Delim  *StringLit // printd/printdln/sprintd/sprintdln only
		Args   []Expr
		// OnFault, where not "", is sprintf's value when reading an
		// argument faults, in place of the error: stap's pretty printing
		// of a context variable ($var$, each of $$parms$) gives "ERROR".
		OnFault string
		// compiled is Format's compilation, made by the parser
		// (CompiledFormat).
		compiled *compiledFormat
	}
	// StatOp is a statistics extractor: @count, @sum, @min, @max, @avg, @variance.
	StatOp struct {
		Typed
		Op   string // "count", "sum", "min", "max", "avg", "variance"
		X    Expr   // *Ident or *Index naming a statistic
		Args []Expr // extra arguments (@variance's bit shift), usually none
	}
	// Hist is @hist_log(X) or @hist_linear(X, Start, Stop, Interval).
	Hist struct {
		Typed
		Linear                bool
		X                     Expr
		Start, Stop, Interval Expr // linear only
	}
	// TargetVar is a `$name` context variable with its component chain
	// (`$p->comm`, `$a[3]`, `$s.f`), or `$$vars`, `$$parms`, `$$locals`, `$$return`.
	// Pretty is the number of trailing `$` (pretty-printing), AddrOf a leading `&`.
	TargetVar struct {
		Typed
		Name       string // including the `$` or `$$`
		Components []*TargetComponent
		Pretty     int
		AddrOf     bool
	}
	// Cast is `@cast(Operand, "Type" [, "Module"])` with its component chain.
	Cast struct {
		Typed
		Operand    Expr
		TypeName   string
		Module     string
		Components []*TargetComponent
		Pretty     int
		AddrOf     bool
	}
	// AtVar is `@var("name[@file]" [, "module"])` with its component chain.
	AtVar struct {
		Typed
		Name       string
		Module     string
		Components []*TargetComponent
		Pretty     int
		AddrOf     bool
	}
	// Entry is `@entry(X)`: X evaluated at function entry, in a return probe.
	Entry struct {
		Typed
		X Expr
	}
	// Defined is `@defined(X)`: whether a context expression resolves.
	Defined struct {
		Typed
		X Expr
	}
	// AtOp is another `@name(args)` operator the grammar accepts but that is rarely
	// used: @perf("name"), @const("C expr"), @enum("NAME"),
	// @enumname(x[, "type"[, "module"]]), @kregister(n), @uregister(n),
	// @kderef(size, addr), @uderef(size, addr), @probewrite(var). The
	// elaborator lowers them (sema/atops.go).
	AtOp struct {
		Typed
		Name string // without the `@`
		Args []Expr
	}
	// Autocast is a context-variable chain applied to an ordinary expression:
	// `f()->member`, `a[1][2]`, `&x`. The pointer's type is inferred later.
	Autocast struct {
		Typed
		Operand    Expr
		Components []*TargetComponent
		Pretty     int
		AddrOf     bool
	}
	// EmbeddedExpr is `%{ ... %}` used as an expression.
	EmbeddedExpr struct {
		Typed
		Code string
	}
)

// TargetComponent is one step of a context-variable chain: `->name`/`.name` (a
// member), or `[index]` (an array element; Index is a literal or an expression).
type TargetComponent struct {
	Pos   Pos
	Kind  TargetComponentKind
	Name  string
	Index Expr
}

// TargetComponentKind tells member access from array indexing.
type TargetComponentKind int

const (
	ComponentMember TargetComponentKind = iota // ->name or .name
	ComponentIndex                             // [expr]
)

func (c *TargetComponent) Position() Pos { return c.Pos }

// ---------------------------------------------------------------------------
// Symbols (filled in by the elaborator)

// VarKind tells where a variable lives.
type VarKind int

const (
	VarLocal VarKind = iota
	VarGlobal
	VarParam
)

// Var is a resolved variable: a global, a probe or function local, or a parameter.
type Var struct {
	Name string
	Kind VarKind
	Pos  Pos  // declaration, or first use for implicitly declared locals
	Type Type // value type (for arrays: the element type)
	// Keys holds the key types of an array; nil for a scalar.
	Keys    []Type
	IsArray bool
	// MaxEntries is the array capacity (declared size, or MAXMAPENTRIES); Wrap makes
	// a full array evict its oldest entries instead of failing.
	MaxEntries int64
	Wrap       bool
	Init       Expr        // global initialiser, nil if none
	Decl       *GlobalDecl // for globals declared in a file
	Index      int         // slot: globals index the program's global table, locals the frame
	// TypePos is where the type was first inferred, for "type was first inferred here".
	TypePos Pos
	// Written and Read tell whether the program ever assigns or reads the variable.
	Written, Read bool
	// PerCPU marks a global that kernel probes only update (++, --, +=, -=,
	// <<< as statements) and never otherwise use: the BPF back end may keep
	// it per CPU, the user side merging the CPUs' values when it reads.
	PerCPU bool
	// LiveUser marks a global that a user-side handler may touch while
	// the kernel probes are attached (a timer, procfs or input probe, or a
	// function one calls; not begin, end or error probes, which run before
	// the programs are attached or after they are detached): reading and
	// resetting a PerCPU global then needs the BPF back end's generations.
	LiveUser bool
	// ByThread marks a global array whose one long key is tid() wherever
	// it is used, in kernel probes only (sema's bythread.go): the BPF back
	// end keeps it in task-local storage.
	ByThread bool
}

// Func is a resolved function: a script or tapset function, or a builtin.
type Func struct {
	Name   string
	Decl   *FuncDecl // nil for builtins
	Params []*Var
	Locals []*Var // all locals of the body, including Params first
	Result Type
	// Builtin names the runtime implementation when Decl is nil (or when a tapset
	// function is implemented natively); empty for script functions.
	Builtin string
}
