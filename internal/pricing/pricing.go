// Package pricing holds the price lists the API quotes.
package pricing

import "conduit/internal/money"

// TypicalVideoCharge is what the balance endpoint reports as a typical video
// charge: the default model (lumen-h3) at its default (shortest) length,
// the price of a video request that sets nothing but a prompt.
const TypicalVideoCharge = 420_000 * money.Micros(1)
