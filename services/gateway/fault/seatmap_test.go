package fault

import "strconv"

// seatMapBody is GET /api/seats/available's answer (docs/http-api.md): a
// snapshot up to a second old.
type seatMapBody struct {
	Sold     int `json:"sold"`
	Sections []struct {
		Row    string   `json:"row"`
		First  int      `json:"first"`
		Seats  []string `json:"seats"`
		Status string   `json:"status"`
	} `json:"sections"`
}

type seatEntry struct{ SeatID, Status string }

// seats lists every seat with its status name.
func (m seatMapBody) seats() []seatEntry {
	names := map[byte]string{'a': "available", 'h': "held", 's': "sold"}
	var out []seatEntry
	for _, sec := range m.Sections {
		for i := 0; i < len(sec.Status); i++ {
			id := sec.Row + strconv.Itoa(sec.First+i)
			if sec.Seats != nil {
				id = sec.Seats[i]
			}
			out = append(out, seatEntry{id, names[sec.Status[i]]})
		}
	}
	return out
}
