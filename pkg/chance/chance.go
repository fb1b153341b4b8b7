// Package chance estimates a waiting fan's chance of a ticket: the
// probability that seats are still left when the fan's turn comes.
//
// The estimate is per event, from the counts every waiting fan shares
// (Counts: seats sold and held, users in the booking room, the highest
// join sequence served), so it costs nothing per fan: Estimate turns the
// counts into Params once per snapshot, and Params.Chance is a cheap
// function of the number of users ahead.
//
// The model: every place in the queue that is passed takes some seats
// (none when its fan left the queue or did not buy, several for an order
// of several seats). Its mean, seats per place, is measured on the places
// already settled (served and out of the booking room, or holding seats in
// it: sold and held seats divided by them); it is the product of admission (one minus abandonment),
// conversion per admission and seats per order. Seats per order (its mean
// and spread) comes from the orders seen (Counts.Orders, from one seat
// before any). The
// seats the fans ahead can still take are the unsold ones less what the
// booking room will still need (its holds, and seats per place for each
// user in it who holds none yet). The seats the n fans ahead take are
// approximately normal: mean n × seats per place, variance n × the
// variance of one place (a place buys an order of K seats with
// probability q: q·E[K²] − per_place², never more than the bound of a
// place taking 0 to max_per_place seats) plus (n × the error of seats per
// place)², the error of a mean measured on few places (and of the prior
// before) and a floor for a crowd whose habits drift. The chance is the probability that at least
// one seat is left for the fan after them.
//
// Limits: it assumes the fans ahead behave like those already served;
// a rush of multi-seat orders or a wave of fans leaving at once moves the
// truth faster than the measure. The fans ahead are counted from the
// ticket's sequence (an upper bound: fans ahead who left make it smaller)
// or the exact position.
package chance

import "math"

// Defaults of Estimate.
const (
	// PriorPerPlace is the seats per place assumed before any place is
	// settled, worth PriorPlaces settled places.
	PriorPerPlace = 0.5
	PriorPlaces   = 10
	// PriorOrders is the weight, in orders, of the assumption that an
	// order takes one seat, before orders are seen.
	PriorOrders = 5
	// PriorError is the error of PriorPerPlace (it shrinks as settled
	// places outweigh the prior's).
	PriorError = 0.2
	// Drift is the relative error of seats per place that no amount of
	// data removes: the fans still waiting may not buy as those served did.
	Drift = 0.02
)

// Counts are the event's numbers an estimate needs (booking.Counts and the
// event's max_seats_per_order).
type Counts struct {
	Total, Sold, Held int64
	// Active is the users in the booking room; Served the highest join
	// sequence admitted (every place up to it is passed).
	Active, Served int64
	// MaxPerOrder is the most seats one order may take (0: 1).
	MaxPerOrder int
	// Orders seen so far (payments started), their seats and the sum of
	// each order's seats squared: the spread of the seats per order.
	Orders, OrderSeats, OrderSeatsSquared int64
}

// Params are an event's estimate, the same for every waiting fan
// (the "chance" object of the progress document).
type Params struct {
	// Seats the fans still waiting can take.
	Seats float64 `json:"seats"`
	// PerPlace is the seats one place in the queue takes on average;
	// Variance the variance of one place's seats; Error the standard
	// error of PerPlace.
	PerPlace float64 `json:"per_place"`
	Variance float64 `json:"variance"`
	Error    float64 `json:"error"`
	// MaxPerPlace is the most seats one place can take.
	MaxPerPlace int `json:"max_per_place"`
}

// Estimate turns the event's counts into Params.
func Estimate(c Counts) Params {
	m := max(1, c.MaxPerOrder)
	// A place buys (with probability q) an order of K seats: per place
	// mean q·E[K] = rho, variance q·E[K²] − rho²; E[K] and E[K²] from the
	// orders seen, starting from one seat.
	orders := float64(max(0, c.Orders)) + PriorOrders
	k := min(float64(m), max(1, (float64(max(0, c.OrderSeats))+PriorOrders)/orders))
	k2 := min(k*float64(m), max(k*k, (float64(max(0, c.OrderSeatsSquared))+PriorOrders)/orders))
	// Settled places: served and out of the room, and the room's users
	// who hold seats (about held / E[K]), counted with their seats. A fan
	// who leaves without buying settles sooner than one who pays, so
	// leaving the holders out would measure too few seats per place while
	// the room is full of payers.
	served, active := float64(max(0, c.Served)), float64(max(0, c.Active))
	held := float64(max(0, c.Held))
	holders := min(active, held/k)
	settled := max(0, min(served, served-active+holders))
	rho := (float64(max(0, c.Sold)) + held + PriorPerPlace*PriorPlaces) / (settled + PriorPlaces)
	rho = min(rho, float64(m))
	q := min(1, rho/k)
	v := min(max(q*k2-rho*rho, 0.01), max(rho*(float64(m)-rho), 0.01))
	prior := PriorError * PriorPlaces / (settled + PriorPlaces)
	se := math.Sqrt(v/(settled+PriorPlaces) + prior*prior + (Drift*rho)*(Drift*rho))
	// the room still needs its holds, and seats per place for each of its
	// users who holds none yet
	room := held + max(0, active-holders)*rho
	seats := float64(c.Total-max(0, c.Sold)) - room
	return Params{Seats: round(max(0, seats), 1), PerPlace: round(rho, 4), Variance: round(v, 4),
		Error: round(se, 4), MaxPerPlace: m}
}

// Chance is the probability, to the hundredth, that at least one seat is
// left when a fan with ahead users ahead gets its turn: 1 when the seats
// exceed what everyone ahead could take, 0 when none are left, otherwise
// between 0.01 and 0.99.
func (p Params) Chance(ahead int64) float64 {
	ahead = max(0, ahead)
	n := float64(ahead)
	switch {
	case p.Seats < 1:
		return 0
	case p.Seats >= n*float64(max(1, p.MaxPerPlace))+1:
		return 1
	}
	mean := n * p.PerPlace
	sd := math.Sqrt(n*p.Variance + (n*p.Error)*(n*p.Error))
	if sd <= 0 || math.IsNaN(sd) {
		if p.Seats-mean >= 1 {
			return 0.99
		}
		return 0.01
	}
	// at least one seat left: the seats ahead take at most Seats-1, with a
	// continuity correction of half a seat
	z := (p.Seats - 0.5 - mean) / sd
	return min(0.99, max(0.01, round(0.5*math.Erfc(-z/math.Sqrt2), 2)))
}

// Words are the page's words for a chance.
func Words(c float64) string {
	switch {
	case c >= 0.9:
		return "Good chance"
	case c >= 0.5:
		return "Fair chance"
	case c >= 0.1:
		return "Slim chance"
	}
	return "Unlikely: most seats will be gone before your turn"
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
