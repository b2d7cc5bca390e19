package protocol

import (
	"errors"
	"strconv"
	"strings"
)

// Amount is what a BUDGET line says (contract section 2): a sum of USD or
// of tokens, set (5), raised (+5) or lifted (none).
type Amount struct {
	None   bool  // none: the budget is lifted
	Raise  bool  // +: the budget rises by Value
	Tokens bool  // Value counts tokens (a t suffix), not USD
	Value  int64 // micro-dollars, or tokens
}

// MaxAmount bounds an amount: a trillion dollars in micro-dollars, or as
// many tokens. Sums of amounts stay far from overflowing an int64.
const MaxAmount = 1_000_000_000_000_000

// Micro is how many micro-dollars make a dollar: USD is counted in whole
// micro-dollars so that sums are exact and replays give the same figures.
const Micro = 1_000_000

// ParseAmount reads an amount: none, or an optional +, then USD as a
// decimal (an optional $, at most six decimals) or tokens as a whole
// number with a t suffix.
func ParseAmount(w string) (Amount, error) {
	if strings.EqualFold(w, "none") {
		return Amount{None: true}, nil
	}
	var a Amount
	if rest, ok := strings.CutPrefix(w, "+"); ok {
		a.Raise, w = true, rest
	}
	if rest, ok := strings.CutSuffix(w, "t"); ok {
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 0 || n > MaxAmount || rest == "" || rest[0] == '+' || rest[0] == '-' {
			return Amount{}, errors.New("not a number of tokens")
		}
		a.Tokens, a.Value = true, n
		return a, nil
	}
	w = strings.TrimPrefix(w, "$")
	v, ok := ParseUSD(w)
	if !ok {
		return Amount{}, errors.New("not a sum in USD")
	}
	a.Value = v
	return a, nil
}

// ParseUSD reads a decimal sum of dollars (5, 2.50, 0.000001) into
// micro-dollars; false if it is not one, is negative, or is finer than a
// micro-dollar or above MaxAmount.
func ParseUSD(s string) (int64, bool) {
	whole, frac, hasFrac := strings.Cut(s, ".")
	if whole == "" && (!hasFrac || frac == "") || len(frac) > 6 || hasFrac && frac == "" {
		return 0, false
	}
	var v int64
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, false
			}
		}
	}
	if whole != "" {
		n, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || n > MaxAmount/Micro {
			return 0, false
		}
		v = n * Micro
	}
	if frac != "" {
		n, _ := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		v += n
	}
	if v > MaxAmount {
		return 0, false
	}
	return v, true
}

// String writes the amount as ParseAmount reads it.
func (a Amount) String() string {
	if a.None {
		return "none"
	}
	s := ""
	if a.Raise {
		s = "+"
	}
	if a.Tokens {
		return s + strconv.FormatInt(a.Value, 10) + "t"
	}
	return s + FormatUSD(a.Value)[1:]
}

// FormatUSD writes micro-dollars as people read money: $4.02, with more
// decimals only where the sum has them ($0.000125).
func FormatUSD(micro int64) string {
	sign := ""
	if micro < 0 {
		sign, micro = "-", -micro
	}
	whole, frac := micro/Micro, micro%Micro
	if frac%10_000 == 0 {
		return sign + "$" + strconv.FormatInt(whole, 10) + "." + pad(frac/10_000, 2)
	}
	f := strings.TrimRight(pad(frac, 6), "0")
	return sign + "$" + strconv.FormatInt(whole, 10) + "." + f
}

// FormatTokens writes a count of tokens as a BUDGET line takes it: 200000t.
func FormatTokens(n int64) string { return strconv.FormatInt(n, 10) + "t" }

func pad(n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	for len(s) < width {
		s = "0" + s
	}
	return s
}
