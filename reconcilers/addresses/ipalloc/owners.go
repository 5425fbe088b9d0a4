package ipalloc

import "hash/maphash"

// owners finds a holder's id by its name. Its main map is keyed by a 32-bit
// hash of the name and holds no pointers: growing it rehashes integers
// instead of reading every name again (that was a third of a dynamic
// allocation), and the garbage collector does not scan it. A name whose
// hash another holder already has goes to a plain map beside it (about one
// name in 65,000 at 65,000 holders); a hit in the main map is confirmed
// against the holder's record.
type owners struct {
	hash     func(string) uint32
	byHash   map[uint32]uint32
	collided map[string]uint32
}

func newOwners() owners {
	seed := maphash.MakeSeed()
	return owners{
		hash:   func(s string) uint32 { return uint32(maphash.String(seed, s)) },
		byHash: map[uint32]uint32{},
	}
}

// ownerKey is what find learnt of a name that holds nothing: its hash and
// whether another holder has that hash. It is good for add until the
// owners change.
type ownerKey struct {
	name  string
	hash  uint32
	taken bool
}

func (o *owners) find(name string, recs *records) (uint32, bool, ownerKey) {
	h := o.hash(name)
	id, taken := o.byHash[h]
	if taken && recs.at(id).owner == name {
		return id, true, ownerKey{}
	}
	if id, ok := o.collided[name]; ok {
		return id, true, ownerKey{}
	}
	return 0, false, ownerKey{name, h, taken}
}

// add records k's name as id.
func (o *owners) add(k ownerKey, id uint32) {
	if !k.taken {
		o.byHash[k.hash] = id
		return
	}
	if o.collided == nil {
		o.collided = map[string]uint32{}
	}
	o.collided[k.name] = id
}

// remove forgets name, which holds id.
func (o *owners) remove(name string, id uint32) {
	if h := o.hash(name); o.byHash[h] == id {
		delete(o.byHash, h)
		return
	}
	delete(o.collided, name)
}

func (o *owners) len() int { return len(o.byHash) + len(o.collided) }
