package budget

import (
	"fmt"
	"time"
)

// Period is the span a budget counts over: a UTC calendar day, week
// (Monday to Sunday) or month, or the whole life of the key. The zero
// value is Total.
type Period uint8

const (
	// Total never resets.
	Total Period = iota
	// Day resets at 00:00 UTC.
	Day
	// Week resets on Monday at 00:00 UTC (ISO 8601 weeks).
	Week
	// Month resets on the first of the month at 00:00 UTC.
	Month
)

// DefaultPeriod is budget_period when left empty.
const DefaultPeriod = Month

// ParsePeriod reads a budget_period: day, week, month or total; "" means
// DefaultPeriod.
func ParsePeriod(s string) (Period, error) {
	switch s {
	case "":
		return DefaultPeriod, nil
	case "day":
		return Day, nil
	case "week":
		return Week, nil
	case "month":
		return Month, nil
	case "total":
		return Total, nil
	}
	return 0, fmt.Errorf("must be day, week, month or total, got %q", s)
}

func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return "total"
}

// Start is the instant the period holding now began, UTC; the zero time
// for Total.
func (p Period) Start(now time.Time) time.Time {
	t := now.UTC()
	y, m, d := t.Date()
	switch p {
	case Day:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Week:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	case Month:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// End is the instant the period that began at start ends (the next one
// begins); the zero time for Total, which never ends.
func (p Period) End(start time.Time) time.Time {
	switch p {
	case Day:
		return start.AddDate(0, 0, 1)
	case Week:
		return start.AddDate(0, 0, 7)
	case Month:
		return start.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// ID names the period that began at start, for the state file and the
// shared state's keys: "day:2025-06-01", "week:2025-06-02",
// "month:2025-06", "total".
func (p Period) ID(start time.Time) string {
	switch p {
	case Day, Week:
		return p.String() + ":" + start.Format(time.DateOnly)
	case Month:
		return "month:" + start.Format("2006-01")
	}
	return "total"
}
