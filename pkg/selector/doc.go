// Package selector implements Project Calico's label selector language: parsing, evaluation
// against label sets, and the canonical string form that Calico hashes into selector IDs.
//
// Grammar (|| binds loosest, then &&, then the prefix !):
//
//	selector  = "" | or
//	or        = and { "||" and }
//	and       = unary { "&&" unary }
//	unary     = { "!" } primary
//	primary   = "(" or ")" | "all()" | "global()" | "has(" key ")"
//	          | key ( "==" | "!=" | "contains" | "starts with" | "ends with" ) string
//	          | key ( "in" | "not in" ) "{" [ string { "," string } [ "," ] ] "}"
//	key       = 1*( letter | digit | "_" | "." | "/" | "-" )
//	string    = '"' { any byte but '"' } '"' | "'" { any byte but "'" } "'"
//
// Whitespace is spaces and tabs only (as in Calico; a newline is an error). There are no
// escapes inside strings. The tokenizer follows Calico's: after a key it accepts the operator
// words as prefixes ("startswith", "notin" and "in{" are accepted), and "has(", "all(" and
// "global(" must have no space before the parenthesis. An empty (or all-blank) selector is all().
//
// Semantics: k == v needs k present with value v; k != v and k not in {...} also match when k
// is absent; contains, starts with and ends with need k present. global() matches label sets
// without the projectcalico.org/namespace label (see NamespaceLabel).
//
// Canonical form (Selector.String) is Calico's byte for byte, so Selector.UniqueID equals
// Calico's "s:" selector IDs: every && or || group is wrapped in parentheses
// (`(a == "b" && c in {"d", "e"})`), values use double quotes unless they contain one, set
// members are sorted and de-duplicated, and runs of ! collapse. The only divergence from Calico
// is that a double negation through parentheses, !(!x), is simplified to x (Calico would print
// "!!x", which does not re-parse to the same tree).
//
// A Selector is immutable and safe for concurrent use. Evaluate does not allocate.
//
// The files:
//
//	selector.go    Selector (Parse, MustParse, Evaluate, String, UniqueID), Labels and Map
//	lexer.go       the tokenizer, with Calico's quirks
//	parser.go      the parser (bounded nesting, MaxNesting), ParseError
//	ast.go         the compiled tree, its evaluation and canonical printing; NamespaceLabel
//	equalities.go  RequiredEqualities: hints for an inverted label index
//	rewrite.go     PrefixKeys: namespace and service-account selectors over prefixed keys
package selector
