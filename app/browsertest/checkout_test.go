package browsertest

// buyPack buys the 50 USD pack from the credits page through the local
// checkout (test mode) and returns on the credits page.
func buyPack(x *b) {
	x.t.Helper()
	x.run("checkout", x.click("Buy the 50.00 USD pack"), x.waitText("body", "TEST MODE"))
	x.accessible("checkout")
	x.shot("checkout")
	x.run("pay", x.click("Pay"), x.waitText("h1", "Credits"))
}

// replayWebhook sends the pack's captured webhook again.
func replayWebhook(x *b) {
	x.t.Helper()
	x.t.Fatal("replaying the checkout webhook: not wired yet")
}
