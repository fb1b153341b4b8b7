package chance

import (
	"math"
	"math/rand/v2"
	"testing"
)

// a sale under way: 1,000 seats, 400 sold from 600 settled places, 30
// held by the 50 users in the room.
var midSale = Counts{Total: 1000, Sold: 400, Held: 30, Active: 50, Served: 650, MaxPerOrder: 1}

func TestChanceFallsWithPlace(t *testing.T) {
	for _, c := range []Counts{midSale, {Total: 500}, {Total: 5000, Sold: 100, Held: 80, Active: 40, Served: 90, MaxPerOrder: 4}} {
		p := Estimate(c)
		prev := 2.0
		for ahead := int64(0); ahead < 20_000; ahead += 7 {
			got := p.Chance(ahead)
			if got > prev {
				t.Fatalf("%+v: chance %v at %d ahead, above %v just before", c, got, ahead, prev)
			}
			prev = got
		}
		if prev > 0.05 {
			t.Errorf("%+v: chance %v far back, want near 0", c, prev)
		}
	}
}

func TestChanceIsOneWhenSeatsOutnumberEveryoneAhead(t *testing.T) {
	p := Estimate(midSale)
	// seats for those waiting: 1000 - 400 - max(30, 50 × per place)
	sure := int64(p.Seats) - 1
	if sure < 400 {
		t.Fatalf("seats %v: the room should leave more than 400", p.Seats)
	}
	for _, ahead := range []int64{0, 1, sure / 2, sure} {
		if got := p.Chance(ahead); got != 1 {
			t.Errorf("%d ahead of %v seats: chance %v, want 1", ahead, p.Seats, got)
		}
	}
	if got := p.Chance(sure + 2); got == 1 {
		t.Errorf("%d ahead of %v seats: chance 1, want below (one of them may buy the last)", sure+2, p.Seats)
	}
	// four seats per order: everyone ahead could take four
	q := Estimate(Counts{Total: 100, MaxPerOrder: 4})
	if q.Chance(24) != 1 || q.Chance(25) == 1 {
		t.Errorf("max 4 per order, 100 seats: chance %v at 24 ahead, %v at 25", q.Chance(24), q.Chance(25))
	}
}

func TestChanceIsNearZeroWhenSoldOut(t *testing.T) {
	for _, c := range []Counts{
		{Total: 100, Sold: 100, Served: 300},
		{Total: 100, Sold: 90, Held: 10, Active: 10, Served: 200}, // the rest held
	} {
		p := Estimate(c)
		for _, ahead := range []int64{0, 1, 1000} {
			if got := p.Chance(ahead); got != 0 {
				t.Errorf("%+v, %d ahead: chance %v, want 0", c, ahead, got)
			}
		}
	}
	// one seat left, a long queue that buys: near 0
	p := Estimate(Counts{Total: 100, Sold: 99, Served: 120})
	if got := p.Chance(50); got > 0.01 {
		t.Errorf("one seat, 50 ahead buying: chance %v", got)
	}
}

func TestChanceIsBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		total := rng.Int64N(10_000)
		sold := rng.Int64N(total + 1)
		held := rng.Int64N(total - sold + 1)
		c := Counts{Total: total, Sold: sold, Held: held, Active: rng.Int64N(500), Served: rng.Int64N(50_000),
			MaxPerOrder: rng.IntN(11)}
		p := Estimate(c)
		for _, ahead := range []int64{-5, 0, 1, rng.Int64N(100_000)} {
			got := p.Chance(ahead)
			if !(got >= 0 && got <= 1) {
				t.Fatalf("%+v, %d ahead: chance %v", c, ahead, got)
			}
		}
	}
	// parameters from a client: nothing breaks it
	for _, p := range []Params{{}, {Seats: 10}, {Seats: 10, PerPlace: -1, Variance: -1, Error: -1},
		{Seats: math.Inf(1)}, {Seats: math.NaN(), PerPlace: math.NaN()}} {
		for _, ahead := range []int64{0, 5, 1 << 40} {
			if got := p.Chance(ahead); !(got >= 0 && got <= 1) {
				t.Errorf("%+v, %d ahead: chance %v", p, ahead, got)
			}
		}
	}
}

// Before anything is sold or settled the estimate rests on its prior and
// says so: a wide error, no extreme answers near the line between seats
// and fans, and the same answer for a sale that has not moved.
func TestChanceIsStableWithNoData(t *testing.T) {
	c := Counts{Total: 1000, Served: 0}
	p := Estimate(c)
	if p.PerPlace != PriorPerPlace || p.Error < 0.2 {
		t.Errorf("no data: %+v, want the prior with a wide error", p)
	}
	if p != Estimate(c) {
		t.Error("the same counts gave another estimate")
	}
	// 1,000 seats, 1,500 ahead: the prior says half buy, but it knows little
	if got := p.Chance(1500); got < 0.2 || got > 0.8 {
		t.Errorf("no data, 1500 ahead of 1000 seats: chance %v, want an undecided answer", got)
	}
	// a few settled places move it only a little
	q := Estimate(Counts{Total: 1000, Sold: 2, Served: 2})
	if math.Abs(q.PerPlace-p.PerPlace) > 0.1 {
		t.Errorf("two buyers moved seats per place from %v to %v", p.PerPlace, q.PerPlace)
	}
}

// On many settled places the chance is sharp: a simulated queue where
// each place buys one seat with probability 0.6 agrees with the estimate
// to within a few hundredths.
func TestChanceMatchesASimulatedQueue(t *testing.T) {
	const seats, rate = 1000, 0.6
	p := Estimate(Counts{Total: 2 * seats, Sold: seats, Served: 1667, MaxPerOrder: 1})
	if math.Abs(p.PerPlace-rate) > 0.01 {
		t.Fatalf("per place %v, want about %v", p.PerPlace, rate)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ahead := range []int64{1500, 1640, 1667, 1700, 1800} {
		got := 0
		const runs = 4000
		for range runs {
			taken := 0
			for range ahead {
				if rng.Float64() < rate {
					taken++
				}
			}
			if taken < seats {
				got++
			}
		}
		want := float64(got) / runs
		// the estimate is wider than the simulation (its drift floor)
		if c := p.Chance(ahead); math.Abs(c-want) > 0.15 {
			t.Errorf("%d ahead: chance %v, simulated %v", ahead, c, want)
		}
	}
}

func TestWords(t *testing.T) {
	for c, want := range map[float64]string{1: "Good chance", 0.9: "Good chance", 0.6: "Fair chance", 0.2: "Slim chance",
		0.05: "Unlikely: most seats will be gone before your turn", 0: "Unlikely: most seats will be gone before your turn"} {
		if got := Words(c); got != want {
			t.Errorf("Words(%v) = %q, want %q", c, got, want)
		}
	}
}

// Seats per order set the spread: with up to four seats per order, a sale
// whose orders take one seat each is told sharper chances than one whose
// orders take one or four; before any order, one seat is assumed.
func TestOrdersSetTheSpread(t *testing.T) {
	base := Counts{Total: 2000, Sold: 700, Served: 1000, MaxPerOrder: 4}
	ones, mixed := base, base
	ones.Orders, ones.OrderSeats, ones.OrderSeatsSquared = 700, 700, 700
	mixed.Orders, mixed.OrderSeats, mixed.OrderSeatsSquared = 280, 700, 140*1+140*16 // half 1, half 4 seats
	p1, pm, p0 := Estimate(ones), Estimate(mixed), Estimate(base)
	if p1.PerPlace != pm.PerPlace || p1.Variance >= pm.Variance {
		t.Fatalf("one seat %+v, mixed %+v: same mean, the mixed one wider", p1, pm)
	}
	if want := 0.7 * 0.3; math.Abs(p1.Variance-want) > 0.01 {
		t.Errorf("one-seat orders: variance %v, want about %v (Bernoulli)", p1.Variance, want)
	}
	if p0.Variance != p1.Variance {
		t.Errorf("no orders seen: variance %v, want the one-seat %v", p0.Variance, p1.Variance)
	}
	// a fan just past the expected line: sharper means lower
	if a, b := p1.Chance(1900), pm.Chance(1900); a >= b {
		t.Errorf("past the line: one-seat chance %v, mixed %v", a, b)
	}
}

// BenchmarkChance is the per-poll work: one fan's chance from the event's
// parameters.
func BenchmarkChance(b *testing.B) {
	p := Estimate(midSale)
	var sink float64
	for i := int64(0); b.Loop(); i++ {
		sink += p.Chance(600 + i%400)
	}
	_ = sink
}
