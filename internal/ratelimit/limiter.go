package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Names of the limit that refused a reservation, in LimitedError.Limit and
// as the limit label of metrics.
const (
	LimitRequests   = "requests"
	LimitTokens     = "tokens"
	LimitRetryAfter = "retry_after"
)

// window is the period configured ceilings and announced limits count over
// unless a reset says otherwise: RPM and TPM are per minute.
const window = time.Minute

// unknownResetBlock is how long a provider that announced remaining 0 with
// neither a reset nor any capacity we could refill from stays blocked: a
// per-minute budget is whole again after at most one window, and sending
// earlier would reach a provider that said it had nothing left.
const unknownResetBlock = window

// ErrLimited is matched (errors.Is) by every *LimitedError.
var ErrLimited = errors.New("rate limited")

// ErrTooLarge means a reservation asked for more tokens than the provider's
// whole token budget (the smaller of the configured and announced TPM): it
// could never succeed there, so the caller must send it elsewhere.
var ErrTooLarge = errors.New("request larger than the provider's token budget")

// LimitedError is a refused reservation: nothing was charged, and Wait says
// how long until the same reservation could succeed if nobody else took
// the budget first.
type LimitedError struct {
	Wait  time.Duration
	Limit string // LimitRequests, LimitTokens or LimitRetryAfter: the one that waits longest
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("rate limited by %s: could succeed in %s", e.Limit, e.Wait)
}

// Unwrap makes errors.Is(err, ErrLimited) true.
func (e *LimitedError) Unwrap() error { return ErrLimited }

// Limiter keeps one provider inside its request and token budgets. Use New;
// all methods are safe for concurrent use.
type Limiter struct {
	mu           sync.Mutex // guards req, tok, blockedUntil, last
	req, tok     dim
	blockedUntil time.Time // Retry-After: nothing passes before this
	last         time.Time // latest now seen; earlier ones are moved up to it
}

// New returns a Limiter with the configured ceilings rpm (requests per
// minute) and tpm (tokens per minute). 0 (or less) means unknown: no local
// limit on that budget until a provider announces one.
func New(rpm, tpm int64) *Limiter {
	l := &Limiter{}
	l.req.init(rpm)
	l.tok.init(tpm)
	return l
}

// nowLocked moves now up to the latest time seen. Callers read the clock
// before taking the lock, so a slightly older now can arrive after a newer
// one; moved up, every decision sees time in order, and no bucket refills
// the same interval twice.
func (l *Limiter) nowLocked(now time.Time) time.Time {
	if now.Before(l.last) {
		return l.last
	}
	l.last = now
	return now
}

// Reserve charges one request and tokens tokens (the estimate; negative
// counts as 0) together or not at all. On success the caller must end the
// Reservation with exactly one Reconcile (the request was sent) or Cancel
// (it was not). On refusal it returns a *LimitedError and charges nothing,
// or, when tokens exceeds the whole token budget, an error wrapping
// ErrTooLarge.
//
// The Reservation is a value so that its holder can keep it inside its
// own state (upstream's Permit) instead of one allocation per request;
// keep it in one place, since a copy would end the charge twice.
func (l *Limiter) Reserve(now time.Time, tokens int64) (Reservation, error) {
	tokens = max(tokens, 0)
	l.mu.Lock()
	now = l.nowLocked(now)
	if c := l.tok.capacity(); c > 0 && tokens > c {
		l.mu.Unlock()
		return Reservation{}, fmt.Errorf("reserving %d tokens against %d: %w", tokens, c, ErrTooLarge)
	}
	wait, limit := l.waitLocked(now, tokens)
	if wait > 0 {
		l.mu.Unlock()
		return Reservation{}, &LimitedError{Wait: wait, Limit: limit}
	}
	l.req.takeLocked(now, 1)
	l.tok.takeLocked(now, tokens)
	reqGen, tokGen := l.req.gen, l.tok.gen
	l.mu.Unlock()
	return Reservation{l: l, tokens: tokens, reqGen: reqGen, tokGen: tokGen}, nil
}

// waitLocked returns how long until one request and tokens tokens could all
// be taken, and which limit decides; 0 means now.
func (l *Limiter) waitLocked(now time.Time, tokens int64) (time.Duration, string) {
	var wait time.Duration
	limit := ""
	if now.Before(l.blockedUntil) {
		wait, limit = l.blockedUntil.Sub(now), LimitRetryAfter
	}
	if w := l.req.waitLocked(now, 1); w > wait {
		wait, limit = w, LimitRequests
	}
	if w := l.tok.waitLocked(now, tokens); w > wait {
		wait, limit = w, LimitTokens
	}
	return wait, limit
}

// Observe applies what a provider announced in a response, success or
// error. Known limits become the provider's capacity (configured ceilings
// still apply on top); a known remaining sets the provider's level now,
// refilling at (limit-remaining)/reset when the reset is known, else at
// limit per minute; remaining 0 blocks that budget until the reset (a minute
// when nothing says when); RetryAfter blocks everything until then,
// extending and never shortening an existing block. Unknown values (counts
// < 0, durations <= 0) change nothing. blocked reports whether a block was
// set or extended: news worth saving for a warm restart.
func (l *Limiter) Observe(now time.Time, rl outcome.RateLimit) (blocked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now = l.nowLocked(now)
	req, tok := l.req.blockedUntil, l.tok.blockedUntil
	l.req.observeLocked(now, rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests)
	l.tok.observeLocked(now, rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens)
	blocked = !req.Equal(l.req.blockedUntil) || !tok.Equal(l.tok.blockedUntil)
	if rl.RetryAfter > 0 {
		if until := now.Add(rl.RetryAfter); until.After(l.blockedUntil) {
			l.blockedUntil, blocked = until, true
		}
	}
	return blocked
}

// Snapshot is a limiter's state at one instant, for /admin/providers and the
// ratelimit_remaining gauge.
type Snapshot struct {
	// RequestsLimit and TokensLimit are the capacities in force: the smaller
	// of the configured ceiling and the provider's announced limit; 0 means
	// unknown (no local limit).
	RequestsLimit int64
	TokensLimit   int64
	// RemainingRequests and RemainingTokens are what could be reserved now
	// (whole units, never below 0, ignoring blocks); -1 means unknown.
	RemainingRequests int64
	RemainingTokens   int64
	// BlockedFor is how long Retry-After or an announced remaining 0 still
	// keeps every request away; 0 means not blocked.
	BlockedFor time.Duration
}

// Snapshot reports the state at now without changing it.
func (l *Limiter) Snapshot(now time.Time) Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	now = later(now, l.last)
	until := later(l.blockedUntil, later(l.req.blockedUntil, l.tok.blockedUntil))
	return Snapshot{
		RequestsLimit:     l.req.capacity(),
		TokensLimit:       l.tok.capacity(),
		RemainingRequests: l.req.remainingLocked(now),
		RemainingTokens:   l.tok.remainingLocked(now),
		BlockedFor:        max(until.Sub(now), 0),
	}
}

// Reservation is one request's charge against a Limiter. End it with exactly
// one Reconcile or Cancel; later calls do nothing. A nil *Reservation and
// the zero Reservation do nothing either, which suits rollback code.
type Reservation struct {
	l      *Limiter
	tokens int64  // tokens charged (the estimate)
	reqGen uint64 // provider bucket generations charged; see dim.gen
	tokGen uint64
	done   bool // guarded by l.mu
}

// Reconcile corrects the token charge to actualTokens, the usage the
// provider reported, once the call is over: it refunds an overestimate and
// charges an underestimate (the bucket may go into debt, down to minus its
// capacity, which later reservations wait out). actualTokens <= 0 means not
// reported: the estimate stands. The provider's bucket is left alone if an
// announcement set its level after this reservation, because the provider's
// number already stands for its own accounting.
func (r *Reservation) Reconcile(now time.Time, actualTokens int64) {
	if r == nil || r.l == nil {
		return
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	if actualTokens <= 0 {
		return
	}
	now = l.nowLocked(now)
	l.tok.adjustLocked(now, actualTokens-r.tokens, r.tokGen)
}

// Cancel gives back the request and tokens charged, for a request that was
// never sent. It does nothing after Reconcile or Cancel, and leaves a
// provider bucket alone whose level an announcement set after this
// reservation (the announcement could not have counted an unsent request).
func (r *Reservation) Cancel(now time.Time) {
	if r == nil || r.l == nil {
		return
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	now = l.nowLocked(now)
	l.req.adjustLocked(now, -1, r.reqGen)
	l.tok.adjustLocked(now, -r.tokens, r.tokGen)
}

// dim is one budget (requests or tokens) seen through two token buckets: a
// request must fit both.
type dim struct {
	configured int64   // ceiling from config; 0: none
	announced  int64   // latest limit the provider announced; 0: never
	learned    float64 // refill per second learned from a reset; 0: none

	// ceil enforces the configured ceiling over our own usage; headers never
	// touch it. Off when configured is 0.
	ceil bucket
	// prov mirrors the provider's budget: capacity announced (else
	// configured), level set by each announced remaining, refilling at
	// learned (else capacity per minute). Off until an announcement with a
	// capacity to hang it on.
	prov bucket
	// last is the last remaining count applied, at lastAt; until
	// lastReset (its announced reset, else a minute) counts only fall
	// except by refill. See stale.
	last      int64
	lastAt    time.Time
	lastReset time.Time
	// gen counts the announcements that set prov's level. A reservation
	// adjusts prov only if gen is unchanged since it charged.
	gen uint64
	// blockedUntil: the provider announced remaining 0; nothing passes
	// before this.
	blockedUntil time.Time
}

func (d *dim) init(configured int64) {
	if configured <= 0 {
		return
	}
	d.configured = configured
	d.ceil = bucket{capacity: float64(configured), rate: perWindow(configured), level: float64(configured)}
}

// capacity is the budget in force: the smaller known of configured and
// announced; 0 when neither is known.
func (d *dim) capacity() int64 {
	switch {
	case d.configured > 0 && d.announced > 0:
		return min(d.configured, d.announced)
	case d.configured > 0:
		return d.configured
	}
	return d.announced
}

// provCapacity is the provider's own budget: announced, else the configured
// value as the best guess (Azure announces remaining but no limit).
func (d *dim) provCapacity() int64 {
	if d.announced > 0 {
		return d.announced
	}
	return d.configured
}

func (d *dim) provRate(capacity int64) float64 {
	if d.learned > 0 {
		return d.learned
	}
	return perWindow(capacity)
}

func (d *dim) observeLocked(now time.Time, limit, remaining int64, reset time.Duration) {
	if limit > 0 {
		d.announced = limit
	}
	c := d.provCapacity()
	if remaining > 0 && d.stale(now, remaining) {
		remaining, reset = -1, 0
	}
	if remaining >= 0 {
		d.last, d.lastAt = remaining, now
		d.lastReset = now.Add(window)
		if reset > 0 {
			d.lastReset = now.Add(reset)
		}
	}
	if c > 0 && remaining >= 0 && remaining < c && reset > 0 {
		// OpenAI's reset is the time until the budget is full again,
		// so the provider refills limit-remaining over reset. Groq's
		// per-day request limits come out right this way, where limit per
		// minute would be 1440 times too fast.
		d.learned = float64(c-remaining) / reset.Seconds()
	}
	switch {
	case c <= 0:
		// Nothing to size a bucket by; only a remaining 0 below matters.
	case remaining >= 0:
		// The provider's count replaces ours. A new generation tells
		// older reservations that their charge went with the old level.
		d.prov.set(now, float64(c), d.provRate(c), float64(remaining))
		d.gen++
	case !d.prov.on() && limit > 0:
		// A limit without a level: start full; the next remaining corrects it.
		d.prov.set(now, float64(c), d.provRate(c), float64(c))
		d.gen++
	case d.prov.on() && limit > 0:
		d.prov.resize(now, float64(c), d.provRate(c))
	}
	if remaining == 0 {
		// A request must not reach a provider that announced it has no
		// budget left (docs/ARCHITECTURE.md, "Rate buckets"). A bucket
		// refilling from 0 would let the first unit through after
		// reset/limit; the provider said reset.
		switch {
		case reset > 0:
			d.blockedUntil = later(d.blockedUntil, now.Add(reset))
		case c <= 0:
			d.blockedUntil = later(d.blockedUntil, now.Add(unknownResetBlock))
		}
		// With a capacity and no reset, prov at level 0 refills at
		// capacity per minute, which is the wait.
	}
}

// stale reports whether an announced remaining is older news than the last
// one applied. Answers to concurrent requests arrive out of order, and an
// answer released now may carry a count the provider computed before the
// newer one already applied. Until the last announced reset, a provider's
// count only falls, except by refill: a count above the last one plus what
// the learned rate refilled since cannot be newer, so it is ignored.
// (Counts at or below that, and anything after the reset, are news.)
func (d *dim) stale(now time.Time, remaining int64) bool {
	if d.lastAt.IsZero() || !now.Before(d.lastReset) {
		return false
	}
	refill := 0.0
	if c := d.provCapacity(); c > 0 {
		refill = d.provRate(c) * now.Sub(d.lastAt).Seconds()
	}
	return float64(remaining) > float64(d.last)+refill+0.5
}

// waitLocked returns how long until need units fit this budget: the longest
// of its block and each bucket's refill.
func (d *dim) waitLocked(now time.Time, need int64) time.Duration {
	var wait time.Duration
	if now.Before(d.blockedUntil) {
		wait = d.blockedUntil.Sub(now)
	}
	return max(wait, d.ceil.wait(now, need), d.prov.wait(now, need))
}

// takeLocked charges n units to both buckets; waitLocked said they fit.
func (d *dim) takeLocked(now time.Time, n int64) {
	if n == 0 {
		return
	}
	d.ceil.adjust(now, n)
	d.prov.adjust(now, n)
}

// adjustLocked charges delta more units (refunds when negative) to the
// ceiling, and to the provider bucket if its generation is still gen.
func (d *dim) adjustLocked(now time.Time, delta int64, gen uint64) {
	d.ceil.adjust(now, delta)
	if gen == d.gen {
		d.prov.adjust(now, delta)
	}
}

func (d *dim) remainingLocked(now time.Time) int64 {
	if !d.ceil.on() && !d.prov.on() {
		return -1
	}
	level := math.Inf(1)
	for _, b := range [...]*bucket{&d.ceil, &d.prov} {
		if b.on() {
			level = min(level, b.levelAt(now))
		}
	}
	return max(int64(math.Floor(level)), 0)
}

// bucket is a token bucket whose level can be set, taken from into debt and
// given back to. x/time/rate's Limiter can neither set a level nor give back
// a past charge (see the package doc), so this one is ours. The zero bucket is off: it holds
// no limit, waits for nothing and ignores charges. Its owner's lock guards
// it, and times must not go backwards (Limiter.nowLocked).
type bucket struct {
	capacity float64   // the most it holds; 0: off
	rate     float64   // refill, units per second; > 0 when on
	level    float64   // at at; in [-capacity, capacity]
	at       time.Time // when level was last brought up to date
}

func (b *bucket) on() bool { return b.capacity > 0 }

// levelAt is the level at now: refilled since at, capped at capacity.
func (b *bucket) levelAt(now time.Time) float64 {
	level := b.level
	if dt := now.Sub(b.at); dt > 0 {
		level += dt.Seconds() * b.rate
	}
	return min(level, b.capacity)
}

// advance brings level up to date at now.
func (b *bucket) advance(now time.Time) {
	b.level = b.levelAt(now)
	b.at = later(b.at, now)
}

// set gives the bucket a capacity, a refill rate and a level at now
// (capped at capacity).
func (b *bucket) set(now time.Time, capacity, rate, level float64) {
	*b = bucket{capacity: capacity, rate: rate, level: min(level, capacity), at: now}
}

// resize changes capacity and rate from now on; the level refilled so far
// stays, capped at the new capacity.
func (b *bucket) resize(now time.Time, capacity, rate float64) {
	b.advance(now)
	b.capacity, b.rate = capacity, rate
	b.level = min(b.level, capacity)
}

// adjust moves the level by -delta at now (delta > 0 takes, < 0 gives
// back): never below minus the capacity (the debt later reservations wait
// out) nor above the capacity.
func (b *bucket) adjust(now time.Time, delta int64) {
	if !b.on() || delta == 0 {
		return
	}
	b.advance(now)
	b.level = min(max(b.level-float64(delta), -b.capacity), b.capacity)
}

// wait returns how long until the bucket holds need units; 0 when off.
// Rounded up, so the units are there at now+wait.
func (b *bucket) wait(now time.Time, need int64) time.Duration {
	if !b.on() {
		return 0
	}
	deficit := float64(need) - b.levelAt(now)
	if deficit <= 0 {
		return 0
	}
	ns := math.Ceil(deficit / b.rate * float64(time.Second))
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

// perWindow is a per-minute count as a rate per second.
func perWindow(n int64) float64 { return float64(n) / window.Seconds() }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
