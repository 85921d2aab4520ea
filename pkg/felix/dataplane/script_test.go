package dataplane

import (
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/nft"
)

// batchScript renders a batch as an `nft -f` script (for comparisons with nft and for test
// failure messages).
func batchScript(b *nft.Batch) string {
	var out strings.Builder
	for i := range b.Ops {
		out.WriteString(opScript(&b.Ops[i]))
		out.WriteByte('\n')
	}
	return out.String()
}

func opScript(op *nft.Op) string {
	t := op.Table.String()
	switch op.Kind {
	case nft.OpAddTable, nft.OpDeleteTable:
		return fmt.Sprintf("%s %s", op.Kind, t)
	case nft.OpAddChain:
		if op.Base != nil {
			return fmt.Sprintf("add chain %s %s { %s }", t, op.Name, op.Base.Text(op.Table.Family))
		}
		return fmt.Sprintf("add chain %s %s", t, op.Name)
	case nft.OpAddRule:
		return fmt.Sprintf("add rule %s %s %s", t, op.Name, op.Rule.Text(op.Table.Family))
	case nft.OpAddSet:
		flags := ""
		if op.Interval {
			flags = " flags interval;"
		}
		return fmt.Sprintf("add set %s %s { type %s;%s }", t, op.Name, op.Type, flags)
	case nft.OpAddMap:
		return fmt.Sprintf("add map %s %s { type %s : verdict; }", t, op.Name, op.Type)
	case nft.OpAddElements, nft.OpDeleteElements:
		parts := make([]string, len(op.Elements))
		for i, e := range op.Elements {
			parts[i] = op.Type.FormatElement(e)
		}
		return fmt.Sprintf("%s %s %s { %s }", op.Kind, t, op.Name, strings.Join(parts, ", "))
	case nft.OpAddMapElements:
		parts := make([]string, len(op.MapElements))
		for i, e := range op.MapElements {
			parts[i] = op.Type.FormatKey(e.Key) + " : " + e.Verdict.String()
		}
		return fmt.Sprintf("add element %s %s { %s }", t, op.Name, strings.Join(parts, ", "))
	case nft.OpDeleteMapElements:
		parts := make([]string, len(op.Keys))
		for i, k := range op.Keys {
			parts[i] = op.Type.FormatKey(k)
		}
		return fmt.Sprintf("delete element %s %s { %s }", t, op.Name, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%s %s %s", op.Kind, t, op.Name) // flush and delete of chains, sets, maps
}
