// Package nla builds and walks netlink attributes (TLVs) the way nf_tables
// uses them: one flat, growing byte buffer, nested attributes whose length is
// patched when they end, numbers in network byte order. It allocates nothing
// per attribute, so a batch of a million set elements is one buffer.
//
// One file, nla.go: Builder (the buffer, nested attributes, numbers), Iter (walking attributes)
// and small readers (CString, Find).
package nla
