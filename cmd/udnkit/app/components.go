package app

// components lists what --controllers can select, in start order.
func components() []Component {
	return []Component{}
}
