package apply

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/nft"
)

func errMissingRef(kind nft.RefKind, name string) error {
	return fmt.Errorf("refers to %s %s, which is deleted", kind, name)
}

// planSetOrMap plans the set or map called name (one namespace).
func (tp *tablePlan) planSetOrMap(name string) {
	ws, wm := tp.want.Set(name), tp.want.Map(name)
	cs, cm := tp.cur.sets[name], tp.cur.maps[name]
	switch {
	case ws != nil:
		tp.planSet(ws, cs, cm)
	case wm != nil:
		tp.planMap(wm, cs, cm)
	default:
		tp.deleteOld(name, cs, cm, phDelSets, phDelMaps)
		delete(tp.changed, name) // deleted, not replaced: its users are checked by checkDeleted
		tp.stats.SetsDeleted += b2i(cs != nil)
		tp.stats.MapsDeleted += b2i(cm != nil)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// deleteOld deletes whatever set or map is called name, in the given phases.
func (tp *tablePlan) deleteOld(name string, cs *nft.Set, cm *nft.Map, setPhase, mapPhase int) {
	if cs != nil {
		tp.emit(setPhase, nft.Op{Kind: nft.OpDeleteSet, Table: tp.id, Name: name})
		tp.ed.sets[name] = nil
	}
	if cm != nil {
		tp.emit(mapPhase, nft.Op{Kind: nft.OpDeleteMap, Table: tp.id, Name: name})
		tp.ed.maps[name] = nil
	}
	if cs != nil || cm != nil {
		tp.changed[name] = true
	}
}

func (tp *tablePlan) planSet(want, cs *nft.Set, cm *nft.Map) {
	switch {
	case cs == nil && cm == nil:
		tp.addSet(want, phAddSets, phAddSets)
	case cs == nil || cs.Type != want.Type || cs.Interval != want.Interval:
		tp.deleteOld(want.Name, cs, cm, phRecreate, phRecreate)
		tp.addSet(want, phRecreate, phRecreateElems)
	case tp.cur.stale[want.Name]:
		tp.rewriteSet(want)
	case cs == want:
	default:
		add, del := nft.DiffElements(cs.Elements, want.Elements)
		tp.setElements(want, add, del)
		tp.ed.sets[want.Name] = want
	}
}

// rewriteSet writes the elements of a set whose elements are not known:
// a flush and every element, in the batch (no moment without them).
func (tp *tablePlan) rewriteSet(s *nft.Set) {
	tp.emit(phElems, nft.Op{Kind: nft.OpFlushSet, Table: tp.id, Name: s.Name, Type: s.Type, Interval: s.Interval})
	if len(s.Elements) > 0 {
		tp.emit(phElems, nft.Op{Kind: nft.OpAddElements, Table: tp.id, Name: s.Name, Type: s.Type, Interval: s.Interval, Elements: s.Elements})
	}
	tp.ed.sets[s.Name], tp.ed.whole[s.Name] = s, false
	tp.stats.SetsRewritten++
	tp.stats.ElementsAdded += len(s.Elements)
}

func (tp *tablePlan) addSet(s *nft.Set, phase, elemPhase int) {
	tp.emit(phase, nft.Op{Kind: nft.OpAddSet, Table: tp.id, Name: s.Name, Type: s.Type, Interval: s.Interval})
	if len(s.Elements) > 0 {
		tp.emit(elemPhase, nft.Op{Kind: nft.OpAddElements, Table: tp.id, Name: s.Name, Type: s.Type, Interval: s.Interval, Elements: s.Elements})
	}
	tp.ed.sets[s.Name], tp.ed.whole[s.Name] = s, true
	tp.stats.SetsAdded++
	tp.stats.ElementsAdded += len(s.Elements)
}

func (tp *tablePlan) setElements(s *nft.Set, add, del []nft.Element) {
	if len(del) > 0 {
		tp.emit(phElems, nft.Op{Kind: nft.OpDeleteElements, Table: tp.id, Name: s.Name, Type: s.Type, Interval: s.Interval, Elements: del})
	}
	if len(add) > 0 {
		tp.emit(phElems, nft.Op{Kind: nft.OpAddElements, Table: tp.id, Name: s.Name, Type: s.Type, Interval: s.Interval, Elements: add})
	}
	tp.stats.ElementsAdded += len(add)
	tp.stats.ElementsRemoved += len(del)
}

// planMap plans a verdict map. The verdicts written are checked (they must
// target regular chains); those kept need no check: a chain they target
// cannot be deleted while they do (checkDeleted).
func (tp *tablePlan) planMap(want *nft.Map, cs *nft.Set, cm *nft.Map) {
	switch {
	case cm == want:
	case cs == nil && cm == nil:
		if tp.checkMap(want, tp.want.CheckMap(want)) {
			tp.addMap(want, phAddSets)
		}
	case cm == nil || cm.Type != want.Type:
		if tp.checkMap(want, tp.want.CheckMap(want)) {
			tp.deleteOld(want.Name, cs, cm, phRecreate, phRecreate)
			tp.addMap(want, phRecreate)
		}
	default:
		put, del := nft.DiffMaps(cm.Elements, want.Elements)
		var err error
		for _, e := range put {
			if err = tp.want.CheckMap(&nft.Map{Name: want.Name, Elements: map[nft.Key]nft.Verdict{e.Key: e.Verdict}}); err != nil {
				break
			}
		}
		if tp.checkMap(want, err) {
			tp.mapElements(want, put, del)
			tp.ed.maps[want.Name] = want
		}
	}
}

// checkMap records err, a map's bad verdict; it reports whether there was none.
func (tp *tablePlan) checkMap(m *nft.Map, err error) bool {
	if err == nil {
		return true
	}
	o := nft.Object{Kind: nft.ObjectMap, Table: tp.id, Name: m.Name, Rule: -1}
	tp.errs = append(tp.errs, nft.ObjectError{Object: o, Op: nft.OpAddMapElements, Err: err})
	return false
}

func (tp *tablePlan) addMap(m *nft.Map, phase int) {
	tp.emit(phase, nft.Op{Kind: nft.OpAddMap, Table: tp.id, Name: m.Name, Type: m.Type})
	elemPhase := phElems
	if phase == phRecreate {
		elemPhase = phRecreateElems
	}
	if len(m.Elements) > 0 {
		tp.emit(elemPhase, nft.Op{Kind: nft.OpAddMapElements, Table: tp.id, Name: m.Name, Type: m.Type, MapElements: m.SortedElements()})
	}
	tp.ed.maps[m.Name] = m
	tp.stats.MapsAdded++
	tp.stats.ElementsAdded += len(m.Elements)
}

func (tp *tablePlan) mapElements(m *nft.Map, put []nft.MapElement, del []nft.Key) {
	if len(del) > 0 {
		tp.emit(phElems, nft.Op{Kind: nft.OpDeleteMapElements, Table: tp.id, Name: m.Name, Type: m.Type, Keys: del})
	}
	if len(put) > 0 {
		tp.emit(phElems, nft.Op{Kind: nft.OpAddMapElements, Table: tp.id, Name: m.Name, Type: m.Type, MapElements: put})
	}
	tp.stats.ElementsAdded += len(put)
	tp.stats.ElementsRemoved += len(del)
}
