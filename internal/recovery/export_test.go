package recovery

// PlantForgetOneConfirmation plants a bug in the restart matching (the
// first stamp that would confirm replies is skipped) until undo is called.
func PlantForgetOneConfirmation() (undo func()) {
	forgetOneConfirmation = true
	return func() { forgetOneConfirmation = false }
}
